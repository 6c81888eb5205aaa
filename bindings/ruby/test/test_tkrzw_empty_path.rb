# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# An empty path opens an on-memory database with no file, as the
# reference's does (what python3-tkrzw 1.0.25 answers), and
# restore_database refuses to write over a database.
class TestTkrzwEmptyPath < Test::Unit::TestCase
  include TempDir
  include Tkrzw

  def test_an_empty_path_opens_an_on_memory_database_of_the_class_dbm_names
    { nil => "TinyDBM", "TinyDBM" => "TinyDBM", "BabyDBM" => "BabyDBM", "CacheDBM" => "CacheDBM",
      "StdHashDBM" => "StdHashDBM", "StdTreeDBM" => "StdTreeDBM" }.each do |name, class_name|
      params = name ? { dbm: name } : {}
      dbm = DBM.new
      assert_equal(Status::SUCCESS, dbm.open("", true, **params))
      assert_equal(Status::SUCCESS, dbm.set("b", "2"))
      assert_equal(Status::SUCCESS, dbm.set("a", "1"))
      assert_equal(["1", class_name], [dbm.get("a"), dbm.inspect_details["class"]])
      assert_equal([nil, nil, false], [dbm.file_path, dbm.file_size, dbm.writable?], class_name)
      assert_equal(Status::SUCCESS, dbm.synchronize(true))
      assert_equal(Status::SUCCESS, dbm.rebuild)
      assert_equal(2, dbm.count)
      assert_equal(Status::PRECONDITION_ERROR, dbm.copy_file_data(path("copy")).code)
      assert_equal(Status::SUCCESS, dbm.close)
      assert_equal(Status::SUCCESS, dbm.open("", true, **params))
      assert_equal(0, dbm.count, "each open is a new database")
      dbm.close
    end
    assert_equal([], Dir.children(@dir), "nothing was written")
  end

  def test_read_only_and_shards
    reader = DBM.new
    assert_equal(Status::SUCCESS, reader.open("", false))
    assert_equal(Status::SUCCESS, reader.set("k", "v"), "no file to protect: it takes writes")
    assert_equal("v", reader.get("k"))
    reader.close
    shards = DBM.new
    assert_equal(Status::SUCCESS, shards.open("", true, num_shards: 3, dbm: "BabyDBM"))
    %w[c a b].each { |k| shards.set(k, k) }
    assert_equal(["", "BabyDBM", 3], [shards.file_path, shards.inspect_details["class"], shards.count])
    iter = shards.make_iterator
    iter.first
    assert_equal("a", iter.get_key, "the shards merge in order")
    shards.close
  end

  def test_a_file_class_with_an_empty_path_is_not_found
    %w[HashDBM TreeDBM SkipDBM].each do |name|
      dbm = DBM.new
      status = dbm.open("", true, dbm: name)
      assert_equal(Status::NOT_FOUND_ERROR, status.code, name)
      assert_match(/the path is empty/, status.message)
      assert_false(dbm.open?)
    end
  end

  def test_restore_database_refuses_to_write_over_a_database
    dbm = DBM.new
    dbm.open(path("src.tkh"), true).or_die
    dbm.set("k", "v").or_die
    dbm.close.or_die
    assert_equal(Status::SUCCESS, DBM.restore_database(path("src.tkh"), path("dest.tkh")))
    size = ::File.size(path("dest.tkh"))
    assert_equal(Status::PRECONDITION_ERROR, DBM.restore_database(path("src.tkh"), path("dest.tkh")).code)
    assert_equal(size, ::File.size(path("dest.tkh")))
    assert_equal(Status::NOT_FOUND_ERROR, DBM.restore_database(path("missing.tkh"), path("x.tkh")).code)
  end
end
