# frozen_string_literal: true

require_relative "helper"

# Kuradb::DBM's and Kuradb::AsyncDBM's reference extras: ANY_DATA in the
# compare-exchanges, process_multi, process_first, rekey and the queue.
class TestExchangeQueue < Test::Unit::TestCase
  include TempDir

  ANY = Kuradb::DBM::ANY_DATA

  def open_tree(&block)
    Kuradb::DBM.open(path("q.tkt"), true, truncate: true, &block)
  end

  def test_compare_exchange_and_get_with_any_data
    open_tree do |db|
      assert_equal([true, nil], db.compare_exchange_and_get("k", nil, "1"))
      assert_equal([false, "1"], db.compare_exchange_and_get("k", nil, "2"))
      assert_equal([false, "1"], db.compare_exchange_and_get("k", "x", "2"))
      assert_equal("1", db["k"])
      # ANY_DATA expected: any existing value; desired: leave it.
      assert_equal([true, "1"], db.compare_exchange_and_get("k", ANY, ANY))
      assert_equal("1", db["k"])
      assert_equal([false, nil], db.compare_exchange_and_get("absent", ANY, "v"))
      assert_false(db.key?("absent"))
      assert_equal([true, "1"], db.compare_exchange_and_get("k", ANY, "2"))
      assert_equal("2", db["k"])
      # An equal String counts as ANY_DATA, not only the constant itself.
      assert_true(db.compare_exchange("k", "\0[ANY]\0".dup, nil))
      assert_false(db.key?("k"))
      assert_false(db.compare_exchange("k", ANY, "3"))
      assert_true(db.compare_exchange("k", nil, ANY)) # absent stays absent
      assert_false(db.key?("k"))
    end
  end

  def test_compare_exchange_multi_with_any_data
    open_tree do |db|
      db["a"] = "1"
      assert_false(db.compare_exchange_multi([["a", ANY], ["b", ANY]], [["c", "x"]]))
      assert_false(db.key?("c"))
      db["b"] = "2"
      assert_true(db.compare_exchange_multi([["a", ANY], ["b", "2"]], [["c", "x"], ["a", nil]]))
      assert_equal(["b", "c"], db.keys.sort)
    end
  end

  def test_process_multi_is_atomic
    open_tree do |db|
      db["from"] = "10"
      db["to"] = "5"
      seen = []
      db.process_multi(["from", "to", "new"]) do |key, value|
        seen << [key, value]
        case key
        when "from" then (value.to_i - 3).to_s
        when "to" then (value.to_i + 3).to_s
        else false
        end
      end
      assert_equal([["from", "10"], ["to", "5"], ["new", nil]], seen)
      assert_equal(["7", "8", nil], [db["from"], db["to"], db["new"]])
      # Another thread's read waits for the whole call.
      reader = nil
      db.process_multi(["from", "to"]) do |key, value|
        reader ||= Thread.new { [db["from"], db["to"]] }
        Thread.pass
        key == "from" ? "0" : (value.to_i + 7).to_s
      end
      assert_equal(["0", "15"], reader.value)
      # An exception leaves the records after it as they were.
      assert_raise(RuntimeError) do
        db.process_multi(["from", "to"]) { |key, _| key == "to" ? raise("stop") : "changed" }
      end
      assert_equal("15", db["to"])
      assert_raise(ArgumentError) { db.process_multi(["from"]) }
    end
  end

  # The blocks run under record locks, so they refuse their own database,
  # in both modes; the other calls work the same with `concurrent`.
  def test_blocks_refuse_their_database_and_concurrent_mode
    Kuradb::DBM.open(path("c.tkh"), true, truncate: true, concurrent: true) do |db|
      db["a"] = "1"
      assert_raise(Kuradb::InfeasibleError) { db.process_multi(["a"]) { db["a"] } }
      assert_raise(Kuradb::InfeasibleError) { db.process_first { db.push_last("x") } }
      assert_equal("1", db["a"])
      db.process_multi(%w[a b]) { |k, v| "#{k}#{v}" }
      assert_equal(["a1", "b"], [db["a"], db["b"]])
      assert_equal([true, "a1"], db.compare_exchange_and_get("a", ANY, nil))
      db.rekey("b", "c")
      key = db.push_last("q", wtime: 1)
      assert_equal(["c", key], db.keys.sort_by { |k| k == "c" ? 0 : 1 })
    end
  end

  def test_process_first
    open_tree do |db|
      assert_false(db.process_first { flunk("called on an empty database") })
      db["b"] = "2"
      db["a"] = "1"
      seen = nil
      assert_true(db.process_first { |k, v| seen = [k, v]; "one" })
      assert_equal(["a", "1"], seen)
      assert_equal("one", db["a"])
      assert_true(db.process_first { false })
      assert_equal(["b"], db.keys)
    end
  end

  def test_rekey
    open_tree do |db|
      db["old"] = "v"
      db["taken"] = "w"
      assert_raise(Kuradb::NotFoundError) { db.rekey("nope", "x") }
      assert_raise(Kuradb::DuplicationError) { db.rekey("old", "taken", overwrite: false) }
      assert_equal(%w[old taken], db.keys.sort)
      db.rekey("old", "new")
      assert_equal([nil, "v"], [db["old"], db["new"]])
      db.rekey("new", "copy", copying: true)
      assert_equal(["v", "v"], [db["new"], db["copy"]])
      db.rekey("copy", "taken")
      assert_equal([nil, "v"], [db["copy"], db["taken"]])
    end
  end

  def test_push_last_and_pop_first
    open_tree do |db|
      assert_nil(db.pop_first)
      keys = %w[first second third].map { |v| db.push_last(v, wtime: 1000.5) }
      # 1000.5 s in 10 ns units, then the next free units.
      base = 100_050_000_000
      assert_equal([base, base + 1, base + 2], keys.map { |k| k.unpack1("Q>") })
      assert_equal(8, keys[0].bytesize)
      early = db.push_last("early", wtime: 10)
      assert_equal([early, "early"], db.pop_first)
      assert_equal([keys[0], "first"], db.pop_first)
      now = db.push_last("now")
      assert_in_delta(Time.now.to_f, now.unpack1("Q>") / 1e8, 60)
      assert_equal(%w[second third now], Array.new(3) { db.pop_first[1] })
      assert_nil(db.pop_first)
    end
  end

  def test_pop_first_waits_for_a_push
    open_tree do |db|
      started = Time.now
      assert_nil(db.pop_first(retry_wait: 0.05))
      assert_operator(Time.now - started, :>=, 0.04)
      pusher = Thread.new do
        sleep 0.05
        db.push_last("late")
      end
      record = db.pop_first(retry_wait: 10)
      pusher.join
      assert_equal("late", record[1])
      assert_operator(Time.now - started, :<, 5)
    end
  end

  # Without the fix in close (waiting for the popping thread's read lock
  # with the VM lock held), no other Ruby thread ran during the close.
  def test_close_during_a_waiting_pop_lets_ruby_run
    db = open_tree
    popper = Thread.new { db.pop_first(retry_wait: 0.4) }
    sleep 0.05
    ticks = []
    ticker = Thread.new { loop { ticks << Time.now; sleep 0.005 } }
    from = Time.now
    db.close
    to = Time.now
    ticker.kill
    assert_nil(popper.value)
    assert_false(db.open?)
    assert_operator(to - from, :>, 0.15, "close waited for the pop")
    assert_operator(ticks.count { |t| t > from + 0.05 && t < to - 0.05 }, :>, 0, "Ruby ran during the close")
  end

  def test_async_forms
    open_tree do |db|
      Kuradb::AsyncDBM.new(db, 2) do |adb|
        key = adb.push_last("q1", wtime: 5).get
        assert_equal(500_000_000, key.unpack1("Q>"))
        adb.push_last("q2", wtime: 6).get
        assert_equal([key, "q1"], adb.pop_first.get)
        assert_equal("q2", adb.pop_first.get[1])
        assert_nil(adb.pop_first.get)
        db["a"] = "1"
        assert_false(adb.compare_exchange_multi([["a", "2"]], [["a", "3"]]).get)
        assert_true(adb.compare_exchange_multi([["a", ANY], ["z", nil]], [["a", "3"], ["z", "4"]]).get)
        assert_equal(["3", "4"], [db["a"], db["z"]])
        assert_true(adb.compare_exchange("a", ANY, ANY).get)
        assert_false(adb.compare_exchange("zz", ANY, "1").get)
        assert_nil(adb.rekey("a", "b").get)
        assert_equal([nil, "3"], [db["a"], db["b"]])
        assert_raise(Kuradb::NotFoundError) { adb.rekey("a", "c").get }
        assert_raise(Kuradb::DuplicationError) { adb.rekey("b", "z", overwrite: false).get }
      end
    end
  end
end
