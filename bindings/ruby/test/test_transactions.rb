# frozen_string_literal: true

require_relative "helper"

# DBM#transaction, #run_transaction, #batch and #snapshot (docs/transactions.md).
class TestTransactions < Test::Unit::TestCase
  include TempDir

  def open_tree(&block)
    Kuradb::DBM.open(path("t.tkt"), true, &block)
  end

  def test_a_block_commits_and_reads_its_own_writes
    open_tree do |db|
      db["a"] = "1"
      answer = db.transaction(durability: :sync) do |tx|
        assert_equal(:sync, tx.durability)
        assert_equal("1", tx["a"])
        tx["a"] = "2"
        tx.set("b", "x").append("b", "y", ",")
        assert_equal(7, tx.increment("n", 7))
        assert_true(tx.delete("a"))
        assert_false(tx.key?("a"))
        assert_equal("x,y", tx.get("b"))
        assert_equal("1", db["a"])
        :done
      end
      assert_equal(:done, answer)
      assert_nil(db["a"])
      assert_equal("x,y", db["b"])
      assert_equal(7, db.increment("n", 0))
    end
  end

  def test_an_exception_aborts_and_goes_on
    open_tree do |db|
      assert_raise(RuntimeError) do
        db.transaction do |tx|
          tx["a"] = "1"
          raise "the work failed"
        end
      end
      assert_nil(db["a"])
      db.transaction { |tx| tx["b"] = "1"; break }
      assert_nil(db["b"])
      tx = db.transaction(durability: :none)
      tx["c"] = "1"
      tx.abort
      assert_false(tx.active?)
      assert_raise(Kuradb::InfeasibleError) { tx.commit }
      assert_equal(0, db.count)
      assert_raise(ArgumentError) { db.transaction(durability: :fast) }
    end
  end

  def test_a_conflict_applies_nothing
    open_tree do |db|
      db["a"] = "1"
      first = db.transaction
      second = db.transaction
      assert_equal("1", first["a"])
      assert_equal("1", second["a"])
      first["a"] = "2"
      second["a"] = "3"
      second["c"] = "3"
      first.commit
      error = assert_raise(Kuradb::ConflictError) { second.commit }
      assert_equal(:conflict, error.kind)
      assert_false(second.active?)
      assert_equal("2", db["a"])
      assert_nil(db["c"])
    end
  end

  def test_savepoints
    open_tree do |db|
      other = db.transaction
      db.transaction do |tx|
        tx["a"] = "1"
        point = tx.savepoint
        tx["b"] = "2"
        tx.remove("a")
        tx.rollback_to(point)
        assert_equal("1", tx["a"])
        assert_nil(tx["b"])
        assert_raise(ArgumentError) { tx.rollback_to(other.savepoint) }
      end
      other.abort
      assert_equal("1", db["a"])
      assert_nil(db["b"])
    end
  end

  def test_run_transaction_retries_conflicts
    open_tree do |db|
      db["n"] = "0"
      calls = 0
      answer = db.run_transaction(retries: 3) do |tx|
        n = tx["n"]
        calls += 1
        db["n"] = "5" if calls == 1
        tx["n"] = (tx["n"].to_i + 1).to_s
        n
      end
      assert_equal([2, "5", "6"], [calls, answer, db["n"]])

      tries = 0
      assert_raise(Kuradb::ConflictError) do
        db.run_transaction(retries: 2, durability: :sync) do |tx|
          tries += 1
          tx["n"]
          db["n"] = "again#{tries}"
          tx["n"] = "lost"
        end
      end
      assert_equal(3, tries)
      assert_equal("again3", db["n"])

      once = 0
      assert_raise(ZeroDivisionError) do
        db.run_transaction(retries: 5) do |tx|
          once += 1
          tx["n"] = "never"
          1 / 0
        end
      end
      assert_equal([1, "again3"], [once, db["n"]])
      assert_raise(ArgumentError) { db.run_transaction(retries: -1) { nil } }
    end
  end

  def test_a_snapshot_keeps_its_state_while_a_writer_goes_on
    open_tree do |db|
      db["a"] = "1"
      db["b"] = "2"
      db.snapshot do |view|
        Thread.new do
          100.times { |i| db["a"] = (i + 10).to_s; db["w#{i}"] = "x" }
          db.remove("b")
        end.join
        assert_equal("1", view["a"])
        assert_equal("2", view.get("b"))
        assert_equal(2, view.count)
        assert_equal(%w[a b], view.keys)
        assert_equal([%w[a 1], %w[b 2]], view.items)
        assert_equal({ "a" => "1", "b" => "2" }, view.each.to_h)
        assert_equal(["a"], view.select { |_k, v| v == "1" }.map(&:first))
        assert_equal(101, db.count)
      end
      view = db.snapshot
      view.release
      assert_false(view.active?)
      assert_raise(Kuradb::InfeasibleError) { view.count }
    end
  end

  def test_a_batch_applies_as_one_unit
    open_tree do |db|
      db["gone"] = "x"
      db.batch(durability: :sync) do |b|
        b["a"] = "1"
        b.set("b", "x").append("b", "y", ",").delete("gone").increment("n", 5, 10)
        assert_equal(5, b.size)
        assert_nil(db["a"])
      end
      assert_equal(["1", "x,y", nil, 15], [db["a"], db["b"], db["gone"], db.increment("n", 0)])
      assert_raise(RuntimeError) do
        db.batch do |b|
          b["discarded"] = "1"
          raise "no"
        end
      end
      assert_nil(db["discarded"])
      b = db.batch(durability: :none)
      b["c"] = "1"
      b.commit
      assert_false(b.active?)
      assert_raise(Kuradb::InfeasibleError) { b["d"] = "1" }
      assert_equal("1", db["c"])
    end
  end

  def test_calls_after_commit_or_close_raise_clearly
    db = Kuradb::DBM.open(path("t.tkt"), true)
    tx = db.transaction
    tx["a"] = "1"
    tx.commit
    error = assert_raise(Kuradb::InfeasibleError) { tx["b"] = "2" }
    assert_match(/finished/, error.message)
    open = db.transaction
    open["c"] = "3"
    view = db.snapshot
    b = db.batch
    b["d"] = "4"
    db.close
    assert_false(open.active?)
    assert_false(view.active?)
    assert_match(/closed/, assert_raise(Kuradb::InfeasibleError) { open.commit }.message)
    assert_match(/closed/, assert_raise(Kuradb::InfeasibleError) { view["a"] }.message)
    assert_match(/not open/, assert_raise(Kuradb::InfeasibleError) { b.commit }.message)
    assert_raise(Kuradb::InfeasibleError) { db.transaction }
    assert_raise(Kuradb::InfeasibleError) { db.snapshot }
    Kuradb::DBM.open(path("t.tkt"), true) do |again|
      assert_equal(["1", nil, nil], [again["a"], again["c"], again["d"]])
    end
  end

  def test_a_concurrent_database_and_an_encoding
    Kuradb::DBM.open(path("c.tkt"), true, concurrent: true, encoding: "UTF-8") do |db|
      threads = 4.times.map do |t|
        Thread.new do
          10.times { db.run_transaction(durability: :sync) { |tx| tx["n"] = ((tx["n"] || "0").to_i + 1).to_s } }
          t
        end
      end
      threads.each(&:join)
      assert_equal("40", db["n"])
      db.snapshot { |view| assert_equal(Encoding::UTF_8, view["n"].encoding) }
    end
  end
end
