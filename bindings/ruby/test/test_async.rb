# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# Kuradb::AsyncDBM and its futures, and the reference's Tkrzw::AsyncDBM.
class TestAsync < Test::Unit::TestCase
  include TempDir

  def test_async_operations
    Kuradb::DBM.open(path("a.tkh"), true) do |db|
      Kuradb::AsyncDBM.new(db, 4) do |adb|
        futures = (0...100).map { |i| adb.set("k#{i}", "v#{i}") }
        assert_true(futures.all? { |f| f.get.nil? })
        assert_true(futures.first.wait(1))
        assert_equal("v7", adb.get("k7").get)
        assert_nil(adb.get("nope").get)
        assert_raise(Kuradb::DuplicationError) { adb.set("k1", "x", overwrite: false).get }
        assert_true(adb.remove("k1").get)
        assert_false(adb.remove("k1").get)
        adb.append("k2", "+", ",").get
        assert_equal("v2,+", db["k2"])
        assert_equal(3, adb.increment("n", 3).get)
        assert_true(adb.compare_exchange("c", nil, "1").get)
        assert_false(adb.compare_exchange("c", nil, "2").get)
        assert_equal({ "k3" => "v3" }, adb.get_multi("k3", "zz").get)
        adb.set_multi({ "m1" => "1", "m2" => "2" }).get
        assert_equal(2, adb.remove_multi("m1", "m2", "m3").get)
        assert_equal(%w[k10 k11], adb.search("begin", "k1", 0).get.sort.first(2))
        adb.synchronize.get
        assert_equal(db.count, adb.count.get)
        # The DBM stays open while an AsyncDBM uses it.
        assert_raise(Kuradb::InfeasibleError) { db.close }
        assert_true(db.open?)
        adb.clear.get
        assert_equal(0, db.count)
      end
      # After close, operations fail through their futures.
      adb = Kuradb::AsyncDBM.new(db, 1)
      adb.close
      assert_raise(Kuradb::InfeasibleError) { adb.get("k").get }
      assert_raise(TypeError) { Kuradb::AsyncDBM.new("not a dbm", 1) }
      assert_raise(Kuradb::InvalidArgumentError) { Kuradb::AsyncDBM.new(db, 0) }
    end
  end

  def test_a_future_does_not_stop_other_threads
    Kuradb::DBM.open(path("t.tkh"), true) do |db|
      Kuradb::AsyncDBM.new(db, 2) do |adb|
        ticks = 0
        ticker = Thread.new { 20.times { ticks += 1; sleep 0.001 } }
        futures = (0...2000).map { |i| adb.set("k#{i}", "v") }
        futures.each(&:get)
        ticker.join
        assert_equal(20, ticks)
        assert_equal(2000, db.count)
      end
    end
  end

  def test_tkrzw_async_dbm
    dbm = Tkrzw::DBM.new
    assert_equal(Tkrzw::Status::SUCCESS, dbm.open(path("r.tkh"), true, num_buckets: 100, concurrent: true))
    async = Tkrzw::AsyncDBM.new(dbm, 4)
    assert_true(async.inspect.include?("AsyncDBM"))
    set_future = async.set("one", "hop")
    assert_true(set_future.inspect.include?("Future"))
    assert_true(set_future.wait)
    assert_equal(Tkrzw::Status::SUCCESS, set_future.get)
    assert_equal(Tkrzw::Status::DUPLICATION_ERROR, async.set("one", "more", false).get)
    assert_equal(Tkrzw::Status::SUCCESS, async.set("two", "step", false).get)
    assert_equal(Tkrzw::Status::SUCCESS, async.append("two", "go", ":").get)
    result = async.get("one").get
    assert_equal([Tkrzw::Status::SUCCESS, "hop"], [result[0].code, result[1]])
    assert_equal("step:go", async.get("two").get[1])
    assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, async.get("nope").get[0])
    assert_equal(Tkrzw::Status::SUCCESS, async.remove("one").get)
    assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, async.remove("one").get)
    assert_equal(Tkrzw::Status::SUCCESS, async.set_multi(false, a: "1", b: "2").get)
    # As the reference: the record that exists stays, the absent one is set.
    assert_equal(Tkrzw::Status::DUPLICATION_ERROR, async.set_multi(false, a: "9", c: "3").get)
    assert_equal(["1", "3"], [async.get("a").get[1], async.get("c").get[1]])
    assert_equal(Tkrzw::Status::SUCCESS, async.remove("c").get)
    assert_equal(Tkrzw::Status::SUCCESS, async.set("s", "\x05").get)
    result = async.increment("s", 2, 0).get
    assert_equal([Tkrzw::Status::SUCCESS, 7], [result[0].code, result[1]])
    assert_equal(Tkrzw::Status::SUCCESS, async.remove("s").get)
    assert_equal(Tkrzw::Status::SUCCESS, async.append_multi(":", a: "x", b: "y").get)
    result = async.get_multi("a", "b", "zz").get
    assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, result[0])
    assert_equal({ "a" => "1:x", "b" => "2:y" }, result[1])
    assert_equal(Tkrzw::Status::SUCCESS, async.remove_multi("a", "b").get)
    result = async.increment("num", 5, 100).get
    assert_equal([Tkrzw::Status::SUCCESS, 105], [result[0].code, result[1]])
    assert_equal(Tkrzw::Status::SUCCESS, async.compare_exchange("c", nil, "ichi").get)
    assert_equal(Tkrzw::Status::INFEASIBLE_ERROR, async.compare_exchange("c", "x", "ni").get)
    assert_equal(Tkrzw::Status::SUCCESS, async.synchronize(false).get)
    assert_equal(Tkrzw::Status::SUCCESS, async.rebuild.get)
    result = async.search("begin", "t").get
    assert_equal([Tkrzw::Status::SUCCESS, ["two"]], [result[0].code, result[1]])
    assert_not_equal(Tkrzw::Status::SUCCESS, dbm.close) # the AsyncDBM still uses it
    async.destruct
    assert_equal(Tkrzw::Status::SUCCESS, dbm.close)
  end
end
