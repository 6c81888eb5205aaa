# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# Calls of the reference's current Ruby release that programs written for it
# make: rebuild tuning, the opening defaults, encodings of AsyncDBM results.
class TestTkrzwCompatCalls < Test::Unit::TestCase
  include TempDir

  def test_a_rebuild_takes_the_running_tuning_of_a_hash
    dbm = Tkrzw::DBM.new
    dbm.open(path("h.tkh"), true, num_buckets: 10).or_die
    dbm.set("k", "v").or_die
    assert_equal(Tkrzw::Status::SUCCESS, dbm.rebuild(fbp_capacity: 100).code)
    assert_equal(Tkrzw::Status::SUCCESS, dbm.rebuild(num_buckets: 100, fbp_capacity: 10, min_read_size: 64).code)
    assert_equal("v", dbm.get("k"))
    adb = Tkrzw::AsyncDBM.new(dbm, 1)
    assert_equal(Tkrzw::Status::SUCCESS, adb.rebuild(fbp_capacity: 5).get.code)
    adb.destruct
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, dbm.rebuild(record_comp_mode: "RECORD_COMP_RC4").code)
    dbm.close.or_die
  end

  def test_a_reopened_tree_keeps_its_order_whatever_its_name
    name = path("numbers.data")
    dbm = Tkrzw::DBM.new
    dbm.open(name, true, dbm: "TreeDBM", key_comparator: "DecimalKeyComparator").or_die
    dbm.set("10", "ten").or_die
    dbm.set("9", "nine").or_die
    dbm.close.or_die
    dbm.open(name, true, key_comparator: "LexicalKeyComparator").or_die
    iter = dbm.make_iterator
    iter.first
    assert_equal("9", iter.get_key)
    dbm.close.or_die
  end

  def test_async_results_come_in_the_encoding_of_the_database
    [nil, "UTF-8"].each do |encoding|
      dbm = Tkrzw::DBM.new
      params = encoding ? { encoding: encoding } : {}
      dbm.open(path("q-#{encoding}.tkt"), true, truncate: true, **params).or_die
      dbm.set("k", "v").or_die
      dbm.set("l", "w").or_die
      adb = Tkrzw::AsyncDBM.new(dbm, 1)
      want = encoding ? Encoding::UTF_8 : Encoding::ASCII_8BIT
      status, key, value = adb.pop_first.get
      assert_equal(Tkrzw::Status::SUCCESS, status.code)
      assert_equal(["k", "v"], [key, value])
      assert_equal([want, want], [key.encoding, value.encoding])
      _, got = adb.get("l").get
      assert_equal(want, got.encoding)
      key, = dbm.pop_first
      assert_equal(want, key.encoding)
      status, key, value = adb.pop_first.get
      assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, status.code)
      assert_nil(key)
      assert_nil(value)
      adb.destruct
      dbm.close.or_die
    end
  end

  def test_utility_numbers_and_page_size
    assert_equal("?\xF8\x00\x00\x00\x00\x00\x00".b, Tkrzw::Utility.serialize_float(1.5))
    assert_equal(1.5, Tkrzw::Utility.deserialize_float(Tkrzw::Utility.serialize_float(1.5)))
    assert_equal(1, Tkrzw::Utility.deserialize_int("\x00\x01".b))
    assert_equal(Encoding::ASCII_8BIT, Tkrzw::Utility.serialize_int(7).encoding)
    assert(Tkrzw::Utility::PAGE_SIZE >= 4096)
  end

  def test_async_synchronize_takes_the_parameters_of_dbm_synchronize
    other = Tkrzw::DBM.new
    other.open(path("b.tks"), true).or_die
    other.set("only-b", "1").or_die
    other.close.or_die
    dbm = Tkrzw::DBM.new
    dbm.open(path("a.tks"), true).or_die
    dbm.set("k", "a").or_die
    adb = Tkrzw::AsyncDBM.new(dbm, 1)
    assert_equal(Tkrzw::Status::SUCCESS,
                 adb.synchronize(false, merge: path("b.tks"), reducer: "ReduceToFirst").get.code)
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, adb.synchronize(false, speed: "fast").get.code)
    adb.destruct
    assert_equal(2, dbm.count)
    assert_equal("1", dbm.get("only-b"))
    dbm.close.or_die
  end

  # The reference's own test passes its parameters as a Hash, not as
  # keywords.
  def test_parameters_as_a_positional_hash
    dbm = Tkrzw::DBM.new
    params = { truncate: true, num_buckets: 10, encoding: "UTF-8" }
    assert_equal(Tkrzw::Status::SUCCESS, dbm.open(path("p.tkh"), true, params).code)
    dbm.set("k", "v").or_die
    assert_equal(Encoding::UTF_8, dbm.get("k").encoding)
    assert_equal(Tkrzw::Status::SUCCESS, dbm.rebuild({ "num_buckets" => "100" }).code)
    assert_equal("100", dbm.inspect_details["num_buckets"])
    assert_equal(Tkrzw::Status::SUCCESS, dbm.synchronize(false, {}).code)
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, dbm.rebuild("num_buckets=5").code)
    adb = Tkrzw::AsyncDBM.new(dbm, 1)
    assert_equal(Tkrzw::Status::SUCCESS, adb.rebuild({ num_buckets: 50 }).get.code)
    assert_equal(Tkrzw::Status::SUCCESS, adb.synchronize(false, {}).get.code)
    adb.destruct
    assert_equal(Tkrzw::Status::SUCCESS, dbm.set_multi({ "a" => "1", "b" => "2" }).code)
    assert_equal(Tkrzw::Status::SUCCESS, dbm.append_multi({ "a" => "x" }).code)
    assert_equal({ "a" => "1x", "b" => "2" }, dbm.get_multi("a", "b"))
    dbm.close.or_die
    assert_equal(Tkrzw::Status::SUCCESS, dbm.open(path("p.tkh"), false, { "no_create" => "true" }).code)
    assert_equal("v", dbm.get("k"))
    dbm.close.or_die
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, dbm.open(path("p.tkh"), true, "truncate=true").code)
    assert_false(dbm.open?)

    index = Tkrzw::Index.new
    assert_equal(Tkrzw::Status::SUCCESS, index.open(path("i.tkt"), true, { truncate: true }).code)
    index.add("k", "v").or_die
    index.close.or_die
    file = Tkrzw::File.new
    assert_equal(Tkrzw::Status::SUCCESS, file.open(path("f.txt"), true, { truncate: true }).code)
    file.close.or_die
  end

  def test_to_s_and_inspect_as_the_reference_formats_them
    dbm = Tkrzw::DBM.new
    assert_equal("(unopened)", dbm.to_s)
    assert_equal("#<Tkrzw::DBM:(unopened)>", dbm.inspect)
    name = path("s.tkh")
    dbm.open(name, true, truncate: true).or_die
    dbm.set("k", "v").or_die
    assert_equal("HashDBM:#{name.inspect}:1", dbm.to_s)
    assert_equal("#<Tkrzw::DBM:HashDBM:#{name.inspect}:1>", dbm.inspect)
    dbm.close.or_die
  end

  def test_each_needs_a_block
    dbm = Tkrzw::DBM.new
    assert_raise_message("not opened database") { dbm.each }
    dbm.open("", true).or_die
    dbm.set("k", "v").or_die
    assert_raise_message("block is not given") { dbm.each }
    seen = []
    assert_nil(dbm.each { |k, v| seen << [k, v] })
    assert_equal([%w[k v]], seen)
    dbm.close.or_die
  end

  def test_the_open_options_no_create_and_sync_hard
    dbm = Tkrzw::DBM.new
    name = path("o.tkh")
    assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, dbm.open(name, true, no_create: true).code)
    assert_false(dbm.open?)
    assert_false(::File.exist?(name))
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, dbm.open(name, true, sync_hard: "maybe").code)
    assert_equal(Tkrzw::Status::SUCCESS, dbm.open(name, true, sync_hard: true).code)
    dbm.set("k", "v").or_die
    assert_equal(Tkrzw::Status::SUCCESS, dbm.close.code)
    assert_equal(Tkrzw::Status::SUCCESS, dbm.open(name, false, { "no_create" => "true", "sync_hard" => "true" }).code)
    assert_equal("v", dbm.get("k"))
    assert_equal(Tkrzw::Status::SUCCESS, dbm.close.code)
    assert_equal(Tkrzw::Status::SUCCESS, dbm.open("", true, no_create: true).code)
    dbm.close.or_die
  end

  def test_iterator_step_and_its_strings
    dbm = Tkrzw::DBM.new
    dbm.open("", true, dbm: "BabyDBM").or_die
    dbm.set("a\tb", "1").or_die
    dbm.set("c", "2").or_die
    iter = dbm.make_iterator
    assert_equal("\"(unlocated)\"", iter.to_s)
    iter.first.or_die
    assert_equal("\"a\\tb\"", iter.to_s)
    assert_equal("#<Tkrzw::Iterator:\"a\\tb\">", iter.inspect)
    status = Tkrzw::Status.new
    assert_equal(["a\tb", "1"], iter.step(status))
    assert_equal(Tkrzw::Status::SUCCESS, status.code)
    assert_equal(%w[c 2], iter.step)
    assert_nil(iter.step(status))
    assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, status.code)
    iter.destruct
    dbm.close.or_die
  end

  # The reference's test opens a hash database and a shard set so.
  def test_lock_mem_buckets_keeps_the_buckets_in_memory
    dbm = Tkrzw::DBM.new
    params = { update_mode: "UPDATE_APPENDING", num_buckets: 100, fbp_capacity: 64, lock_mem_buckets: true }
    assert_equal(Tkrzw::Status::SUCCESS, dbm.open(path("l.tkh"), true, params).code)
    dbm.set("k", "v").or_die
    assert_equal(Tkrzw::Status::SUCCESS, dbm.rebuild(lock_mem_buckets: true).code)
    dbm.close.or_die
    shards = { num_shards: 4, dbm: "hash", num_buckets: 100, lock_mem_buckets: false }
    assert_equal(Tkrzw::Status::SUCCESS, dbm.open(path("casket"), true, shards).code)
    assert_equal("HashDBM", dbm.inspect_details["class"])
    dbm.close.or_die
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, dbm.open(path("m.tkh"), true, lock_mem_buckets: "maybe").code)
  end
end
