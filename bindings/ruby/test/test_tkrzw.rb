# frozen_string_literal: true

require_relative "helper"
require "open3"
require "rbconfig"
require "tkrzw"

# `require "tkrzw"`: the reference's Ruby API over kuradb, checked against
# what tkrzw-ruby documents (its API document and test program).
class TestTkrzw < Test::Unit::TestCase
  include TempDir
  include Tkrzw

  def test_status
    status = Status.new
    assert_equal(Status::SUCCESS, status.code)
    assert_equal(Status::SUCCESS, status)
    assert_not_equal(Status::UNKNOWN_ERROR, status)
    assert_equal("", status.message)
    assert_true(status.ok?)
    status.set(Status::NOT_FOUND_ERROR, "foobar")
    assert_equal("NOT_FOUND_ERROR: foobar", status.to_s)
    assert_equal(7, status.to_i)
    assert_false(status.ok?)
    other = Status.new(Status::NOT_IMPLEMENTED_ERROR, "void")
    status.join(other)
    assert_equal("NOT_FOUND_ERROR: foobar", status.to_s)
    status.set(Status::SUCCESS, "OK")
    status.join(other)
    assert_equal("NOT_IMPLEMENTED_ERROR: void", status.to_s)
    expt = assert_raise(StatusException) { status.or_die }
    assert_kind_of(RuntimeError, expt)
    assert_equal("NOT_IMPLEMENTED_ERROR: void", expt.message)
    assert_equal(status, expt.status)
    assert_equal("SUCCESS", Status.code_name(Status::SUCCESS))
    assert_equal("INFEASIBLE_ERROR", Status.code_name(Status::INFEASIBLE_ERROR))
    assert_equal([12, 13], [Status::NETWORK_ERROR, Status::APPLICATION_ERROR])
    assert_match(/Tkrzw::Status/, status.inspect)
  end

  def test_utility
    assert_match(/\A\d+\.\d+\.\d+\z/, Utility::VERSION)
    assert_true(Utility::OS_NAME.size.positive?)
    assert_true(Utility::PAGE_SIZE.positive?)
    assert_equal(-2**31, Utility::INT32MIN)
    assert_equal(2**64 - 1, Utility::UINT64MAX)
    assert_true(Utility.get_memory_capacity.positive?)
    assert_true(Utility.get_memory_usage.positive?)
    # The values tkrzw-ruby's own test expects of the reference's hashes.
    assert_equal(3_042_090_208, Utility.primary_hash("abc", (1 << 32) - 1))
    assert_equal(16_973_900_370_012_003_622, Utility.primary_hash("abc"))
    assert_equal(702_176_507, Utility.secondary_hash("abc", (1 << 32) - 1))
    assert_equal(1_765_794_342_254_572_867, Utility.secondary_hash("abc"))
    assert_equal(0, Utility.edit_distance_lev("", ""))
    assert_equal(1, Utility.edit_distance_lev("ac", "abc"))
    assert_equal(3, Utility.edit_distance_lev("あいう", "あう"))
    assert_equal(1, Utility.edit_distance_lev("あいう", "あう", true))
  end

  def test_dbm_classes_and_statuses
    { "casket.tkh" => "HashDBM", "casket.tkt" => "TreeDBM", "casket.tks" => "SkipDBM",
      "casket.tkmt" => "TinyDBM", "casket.tkmb" => "BabyDBM" }.each do |name, class_name|
      dbm = DBM.new
      assert_false(dbm.open?)
      assert_equal(Status::SUCCESS, dbm.open(path(name), true, truncate: true, concurrent: true,
                                                                encoding: "UTF-8"))
      assert_equal(class_name, dbm.inspect_details["class"])
      assert_true(dbm.inspect.include?(class_name))
      assert_true(dbm.to_s.include?(class_name))
      (0...20).each { |i| assert_equal(Status::SUCCESS, dbm.set(format("%08d", i), i.to_s, false)) }
      # kuradb's skip database sees records once synchronized (docs/ruby.md).
      assert_equal(Status::SUCCESS, dbm.synchronize(false))
      (0...20).step(2) { |i| assert_equal(Status::SUCCESS, dbm.remove(format("%08d", i))) }
      assert_equal(Status::SUCCESS, dbm.synchronize(false))
      assert_equal(10, dbm.count)
      assert_equal(10, dbm.to_i)
      assert_equal(Status::NOT_FOUND_ERROR, dbm.remove("00000000"))
      assert_equal(Status::DUPLICATION_ERROR, dbm.set("00000001", "x", false))
      if %w[HashDBM TreeDBM TinyDBM BabyDBM].include?(class_name)
        assert_equal(Status::SUCCESS, dbm.set("日本", "東京"))
        assert_equal("東京", dbm.get("日本"))
        assert_equal(Status::SUCCESS, dbm.remove("日本"))
      end
      assert_true(dbm.open?)
      assert_true(dbm.writable?)
      assert_true(dbm.healthy?)
      assert_equal(%w[TreeDBM SkipDBM BabyDBM].include?(class_name), dbm.ordered?)
      assert_equal(Status::SUCCESS, dbm.close)
      assert_false(dbm.open?)
      dbm.destruct
    end
  end

  def test_dbm_methods
    dbm = DBM.new
    assert_equal(Status::SUCCESS, dbm.open(path("m.tkh"), true, num_buckets: 100))
    assert_raise_message("opened database") { dbm.open(path("m.tkh"), true) }
    status = Status.new
    assert_nil(dbm.get("nope", status))
    assert_equal(Status::NOT_FOUND_ERROR, status)
    sv = dbm.set_and_get("k", "apple", false)
    assert_equal([Status::SUCCESS, nil], [sv[0].code, sv[1]])
    sv = dbm.set_and_get("k", "orange", false)
    assert_equal([Status::DUPLICATION_ERROR, "apple"], [sv[0].code, sv[1]])
    sv = dbm.remove_and_get("k")
    assert_equal([Status::SUCCESS, "apple"], [sv[0].code, sv[1]])
    sv = dbm.remove_and_get("k")
    assert_equal([Status::NOT_FOUND_ERROR, nil], [sv[0].code, sv[1]])
    assert_equal(10_002, dbm.increment("n", 2, 10_000, status))
    assert_equal(Status::SUCCESS, status)
    assert_equal(10_002, dbm.increment("n", Utility::INT64MIN, 0, status))
    # As the reference: a value not 8 bytes long counts from its big-endian
    # bytes (the first 8 of a longer one), and the sum is stored as 8 bytes.
    assert_equal(Status::SUCCESS, dbm.set("short", "\x01\x00"))
    assert_equal(257, dbm.increment("short", 1, 0, status))
    assert_equal([0, 257].pack("NN"), dbm.get("short").b)
    assert_equal(Status::SUCCESS, dbm.set("long", "\x00" * 7 + "\x02tail"))
    assert_equal(2, dbm.increment("long", Utility::INT64MIN, 0, status))
    assert_equal(3, dbm.increment("long", 1, 0, status))
    assert_equal(Status::SUCCESS, dbm.remove_multi("short", "long"))
    assert_equal(Status::SUCCESS, dbm.set("1", "100"))
    assert_equal(Status::SUCCESS, dbm.compare_exchange("1", "100", "101"))
    assert_equal(Status::INFEASIBLE_ERROR, dbm.compare_exchange("1", "100", "102"))
    assert_equal(Status::SUCCESS, dbm.compare_exchange("1", "101", nil))
    assert_equal(Status::SUCCESS, dbm.compare_exchange_multi([["hop", nil], ["step", nil]],
                                                             [["hop", "one"], ["step", "two"]]))
    assert_equal(Status::INFEASIBLE_ERROR, dbm.compare_exchange_multi([["hop", "x"]], [["hop", "y"]]))
    assert_equal(Status::SUCCESS, dbm.append("foo", "bar", ","))
    assert_equal(Status::SUCCESS, dbm.append("foo", "baz", ","))
    assert_equal("bar,baz", dbm.get("foo"))
    dbm["abc"] = "defg"
    assert_equal("defg", dbm["abc"])
    assert_equal("defg", dbm.delete("abc"))
    assert_nil(dbm["abc"])
    assert_equal(Status::SUCCESS, dbm.set_multi(true, one: "first", two: "second", three: "third"))
    assert_equal(Status::SUCCESS, dbm.append_multi(":", one: "1", two: "2"))
    got = dbm.get_multi("one", "two", "nope")
    assert_equal({ "one" => "first:1", "two" => "second:2" }, got)
    assert_equal(Status::SUCCESS, dbm.remove_multi("one", "two"))
    assert_equal(Status::NOT_FOUND_ERROR, dbm.remove_multi("two", "three"))
    assert_nil(dbm.get("three"))
    assert_equal(Status::SUCCESS, dbm.set(1, 2)) # non-Strings are stored as their to_s
    assert_equal("2", dbm.get("1"))
    assert_true(dbm.file_size.positive?)
    assert_true(dbm.file_path.end_with?("m.tkh"))
    assert_equal(Status::SUCCESS, dbm.rebuild(num_buckets: 1000))
    assert_includes([true, false], dbm.should_be_rebuilt?)
    assert_equal(Status::SUCCESS, dbm.copy_file_data(path("copy.tkh")))
    assert_equal(Status::SUCCESS, DBM.restore_database(path("copy.tkh"), path("restored.tkh")))
    assert_equal(Status::SUCCESS, DBM.restore_database(path("copy.tkh"), path("r2.tkh"), "HashDBM", -1))
    # A positive end offset: an appending hash file as it was at that size.
    log = DBM.new
    assert_equal(Status::SUCCESS, log.open(path("log.tkh"), true, update_mode: "UPDATE_APPENDING"))
    log.set("k", "first")
    log.set("gone", "later")
    log.synchronize(false)
    size_then = log.file_size
    log.set("k", "second")
    log.remove("gone")
    log.close
    assert_equal(Status::SUCCESS, DBM.restore_database(path("log.tkh"), path("then.tkh"), "", size_then))
    past = DBM.new
    assert_equal(Status::SUCCESS, past.open(path("then.tkh"), false))
    assert_equal(%w[first later], [past.get("k"), past.get("gone")])
    past.close
    assert_equal(Status::INVALID_ARGUMENT_ERROR, DBM.restore_database(path("log.tkh"), path("t2.tkt"), "TreeDBM", 100))
    # An encrypted source restores with its key, and the copy keeps it.
    secret = DBM.new
    assert_equal(Status::SUCCESS, secret.open(path("secret.tkh"), true, cipher_key: "k3y"))
    secret.set("hidden", "value")
    secret.close
    assert_not_equal(Status::SUCCESS, DBM.restore_database(path("secret.tkh"), path("nokey.tkh")))
    assert_equal(Status::SUCCESS, DBM.restore_database(path("secret.tkh"), path("withkey.tkh"), "", -1, "k3y"))
    kept = DBM.new
    assert_equal(Status::SUCCESS, kept.open(path("withkey.tkh"), false, cipher_key: "k3y"))
    assert_equal("value", kept.get("hidden"))
    kept.close
    export = DBM.new
    assert_equal(Status::SUCCESS, export.open("", true, dbm: "BabyDBM"))
    assert_equal(Status::SUCCESS, dbm.export(export))
    assert_equal(dbm.count, export.count)
    assert_equal(Status::SUCCESS, export.clear)
    assert_equal(0, export.to_i)
    export.close
    memory = DBM.new
    assert_equal(Status::SUCCESS, memory.open("", true))
    assert_equal("TinyDBM", memory.inspect_details["class"])
    memory.close
    assert_equal(%w[foo hop], dbm.search("contain", "o").sort)
    assert_raise(StatusException) { dbm.search("foo", "x") }
    assert_equal(Status::SUCCESS, dbm.close)
    assert_raise(RuntimeError) { dbm.get("x") }
  end

  def test_iterator
    dbm = DBM.new
    dbm.open(path("it.tkt"), true, truncate: true, encoding: "UTF-8").or_die
    iter = dbm.make_iterator
    assert_equal(Status::SUCCESS, iter.first)
    status = Status.new
    assert_nil(iter.get(status))
    assert_equal(Status::NOT_FOUND_ERROR, status)
    (1..100).each { |i| dbm.set(format("%03d", i), (i * i).to_s, false).or_die }
    assert_equal(Status::SUCCESS, iter.first)
    assert_equal("001", iter.get_key)
    assert_equal("1", iter.get_value)
    assert_true(iter.to_s.include?("001"))
    assert_equal(Status::SUCCESS, iter.last)
    assert_equal("100", iter.get_key)
    assert_equal(Status::SUCCESS, iter.jump("050"))
    assert_equal("050", iter.get_key)
    assert_equal(Status::SUCCESS, iter.jump_lower("050", true))
    assert_equal("050", iter.get_key)
    assert_equal(Status::SUCCESS, iter.previous)
    assert_equal("049", iter.get_key)
    assert_equal(Status::SUCCESS, iter.jump_lower("050", false))
    assert_equal("049", iter.get_key)
    assert_equal(Status::SUCCESS, iter.jump_upper("050", false))
    assert_equal("051", iter.get_key)
    assert_equal(Status::SUCCESS, iter.set("new"))
    assert_equal("new", dbm.get("051"))
    assert_equal(Status::SUCCESS, iter.remove)
    assert_nil(dbm.get("051"))
    iter.destruct
    records = {}
    dbm.each { |k, v| records[k] = v }
    assert_equal(99, records.size)
    dbm.close
    assert_not_equal(Status::SUCCESS, Iterator.new(DBM.new.tap { |d| d.open(path("x.tkh"), true) }).last)
    assert_raise(ArgumentError) { Iterator.new("not a dbm") }
  end

  def test_a_program_written_for_tkrzw_runs
    program = ::File.join(__dir__, "programs", "tkrzw_example.rb")
    lib = ::File.expand_path("../lib", __dir__)
    out, err, st = Open3.capture3(RbConfig.ruby, "-I", lib, program, path("casket.tkh"))
    assert_true(st.success?, err)
    lines = out.lines.map(&:chomp)
    assert_equal(['"one"', "nil", "true", "nil", "NOT_FOUND_ERROR"], lines[0, 5])
    assert_equal(['"alpha: one"', '"gamma: three"'], lines[5, 2].sort)
    assert_equal(%w[alpha=one gamma=three], lines[7, 2].sort)
    assert_equal("2", lines[9])
  end
end
