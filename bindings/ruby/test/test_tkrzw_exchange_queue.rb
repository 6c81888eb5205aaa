# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# Tkrzw::DBM's and Tkrzw::AsyncDBM's compare-exchange, rekey and queue
# methods, with the statuses tkrzw-ruby's API document gives them.
class TestTkrzwExchangeQueue < Test::Unit::TestCase
  include TempDir
  include Tkrzw

  def open_dbm(name = "t.tkt")
    dbm = DBM.new
    assert_equal(Status::SUCCESS, dbm.open(path(name), true, truncate: true))
    dbm
  end

  def test_any_data
    dbm = open_dbm
    assert_equal("\0[ANY]\0".b, DBM::ANY_DATA)
    dbm.set("k", "v")
    assert_equal(Status::SUCCESS, dbm.compare_exchange("k", DBM::ANY_DATA, DBM::ANY_DATA))
    assert_equal("v", dbm.get("k"))
    assert_equal(Status::INFEASIBLE_ERROR, dbm.compare_exchange("none", DBM::ANY_DATA, "x"))
    status, old = dbm.compare_exchange_and_get("k", "v", "w")
    assert_equal([Status::SUCCESS, "v"], [status.code, old])
    status, old = dbm.compare_exchange_and_get("k", "v", "z")
    assert_equal([Status::INFEASIBLE_ERROR, "w"], [status.code, old])
    status, old = dbm.compare_exchange_and_get("k", DBM::ANY_DATA, nil)
    assert_equal([Status::SUCCESS, "w"], [status.code, old])
    status, old = dbm.compare_exchange_and_get("k", nil, DBM::ANY_DATA)
    assert_equal([Status::SUCCESS, nil], [status.code, old])
    assert_nil(dbm.get("k"))
    dbm.set("a", "1")
    assert_equal(Status::INFEASIBLE_ERROR,
                 dbm.compare_exchange_multi([["a", DBM::ANY_DATA], ["b", DBM::ANY_DATA]], [["c", "3"]]))
    assert_equal(Status::SUCCESS, dbm.compare_exchange_multi([["a", DBM::ANY_DATA], ["b", nil]], [["b", 2]]))
    assert_equal("2", dbm.get("b"))
    assert_equal(Status::SUCCESS, dbm.close)
  end

  def test_process_multi_and_first
    dbm = open_dbm
    assert_equal(Status::NOT_FOUND_ERROR, dbm.process_first(true) { flunk("called on an empty database") })
    dbm.set("x", "1")
    dbm.set("y", "2")
    seen = []
    status = dbm.process_multi(["x", "y", "z"], true) do |k, v|
      seen << [k, v]
      k == "y" ? false : "#{v}!"
    end
    assert_equal(Status::SUCCESS, status)
    assert_equal([["x", "1"], ["y", "2"], ["z", nil]], seen)
    assert_equal(["1!", nil, "!"], [dbm.get("x"), dbm.get("y"), dbm.get("z")])
    assert_equal(Status::SUCCESS, dbm.process_first(true) { |k, v| "#{k}=#{v}" })
    assert_equal("x=1!", dbm.get("x"))
    # As the reference, a read-only call leaves the record whatever the block answers.
    assert_equal(Status::SUCCESS, dbm.process_multi(["x"], false) { "written" })
    assert_equal("x=1!", dbm.get("x"))
    assert_equal(Status::SUCCESS, dbm.close)
  end

  def test_rekey
    dbm = open_dbm
    dbm.set("a", "1")
    dbm.set("b", "2")
    assert_equal(Status::NOT_FOUND_ERROR, dbm.rekey("zz", "c"))
    assert_equal(Status::DUPLICATION_ERROR, dbm.rekey("a", "b", false))
    assert_equal(Status::SUCCESS, dbm.rekey("a", "c"))
    assert_equal([nil, "1"], [dbm.get("a"), dbm.get("c")])
    assert_equal(Status::SUCCESS, dbm.rekey("c", "b", true, true))
    assert_equal(["1", "1"], [dbm.get("c"), dbm.get("b")])
    assert_equal(Status::SUCCESS, dbm.close)
  end

  def test_queue
    dbm = open_dbm
    status = Status.new
    assert_nil(dbm.pop_first(status))
    assert_equal(Status::NOT_FOUND_ERROR, status)
    assert_equal(Status::SUCCESS, dbm.push_last("two", 2.0))
    assert_equal(Status::SUCCESS, dbm.push_last("one", 1.0))
    assert_equal(Status::SUCCESS, dbm.push_last("one-bis", 1.0))
    assert_equal(Status::SUCCESS, dbm.push_last("now"))
    key, value = dbm.pop_first(status)
    assert_equal(Status::SUCCESS, status)
    assert_equal([[100_000_000].pack("Q>"), "one"], [key, value])
    assert_equal([100_000_001].pack("Q>"), dbm.pop_first[0])
    assert_equal(%w[two now], [dbm.pop_first[1], dbm.pop_first[1]])
    assert_equal(0, dbm.count)
    assert_equal(Status::SUCCESS, dbm.close)
  end

  def test_async
    dbm = open_dbm
    async = AsyncDBM.new(dbm, 2)
    assert_equal(Status::SUCCESS, async.push_last("v1", 3).get)
    assert_equal(Status::SUCCESS, async.push_last("v2").get)
    status, key, value = async.pop_first.get
    assert_equal([Status::SUCCESS, [300_000_000].pack("Q>"), "v1"], [status.code, key, value])
    assert_equal("v2", async.pop_first.get[2])
    status, key, value = async.pop_first.get
    assert_equal([Status::NOT_FOUND_ERROR, nil, nil], [status.code, key, value])
    dbm.set("a", "1")
    assert_equal(Status::INFEASIBLE_ERROR, async.compare_exchange_multi([["a", "2"]], [["a", "3"]]).get)
    assert_equal(Status::SUCCESS,
                 async.compare_exchange_multi([["a", DBM::ANY_DATA]], [["a", "3"], ["b", "4"]]).get)
    assert_equal(["3", "4"], [dbm.get("a"), dbm.get("b")])
    assert_equal(Status::SUCCESS, async.compare_exchange("a", DBM::ANY_DATA, nil).get)
    assert_nil(dbm.get("a"))
    assert_equal(Status::NOT_FOUND_ERROR, async.rekey("a", "c").get)
    assert_equal(Status::SUCCESS, async.rekey("b", "b2", false).get)
    dbm.set("c", "5")
    assert_equal(Status::DUPLICATION_ERROR, async.rekey("c", "b2", false).get)
    assert_equal(Status::SUCCESS, async.rekey("c", "d").get)
    assert_equal([nil, "5"], [dbm.get("c"), dbm.get("d")])
    async.destruct
    assert_equal(Status::SUCCESS, dbm.close)
  end
end
