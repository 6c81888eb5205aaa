# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# Another process's lock: Kuradb::DBM fails at once by default, naming the
# holder, and waits only when asked (wait: true, lock_timeout:); Tkrzw::DBM
# waits as the reference does unless no_wait.
class TestLocks < Test::Unit::TestCase
  include TempDir

  # A forked child holding +file+ with an exclusive flock until it is killed,
  # holding it when this returns.
  def hold(file)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      File.open(file, "r") do |f|
        f.flock(File::LOCK_EX)
        writer.puts("held")
        writer.flush
        sleep 60
      end
    end
    writer.close
    assert_equal("held", reader.gets&.chomp)
    reader.close
    pid
  end

  def release(pid)
    Process.kill(:TERM, pid)
    Process.wait(pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  def test_an_open_beside_another_process_fails_at_once_and_waits_only_when_asked
    file = path("held.kh")
    Kuradb::DBM.open(file, true) { |db| db["k"] = "v" }
    pid = hold(file)
    begin
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      error = assert_raise(Kuradb::WouldBlockError) { Kuradb::DBM.open(file, false) }
      assert_operator(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 2)
      assert_match(/pid #{pid}/, error.message)
      assert_match(/wait=true/, error.message)
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      error = assert_raise(Kuradb::WouldBlockError) { Kuradb::DBM.open(file, false, lock_timeout: 0.3) }
      assert_match(/gave up waiting/, error.message)
      assert_operator(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.3)
      refused = Tkrzw::DBM.new
      assert_false(refused.open(file, false, no_wait: true).ok?)
      releaser = Thread.new do
        sleep 0.5
        release(pid)
      end
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      Kuradb::DBM.open(file, false, wait: true) { |db| assert_equal("v", db["k"]) }
      assert_operator(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.3)
      releaser.join
      # The reference-compatible layer waits by default.
      pid = hold(file)
      releaser = Thread.new do
        sleep 0.5
        release(pid)
      end
      waiting = Tkrzw::DBM.new
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      assert_true(waiting.open(file, false).ok?)
      assert_operator(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 0.3)
      waiting.close
      releaser.join
    ensure
      release(pid)
    end
  end
end

# Tkrzw::DBM ignores another key_comparator on reopen, as the reference does;
# Kuradb::DBM refuses it.
class TestReopenComparator < Test::Unit::TestCase
  include TempDir

  def test_the_compat_layer_ignores_another_comparator_and_kuradb_refuses_it
    file = path("casket.tkt")
    db = Tkrzw::DBM.new
    assert_true(db.open(file, true, key_comparator: "DecimalKeyComparator").ok?)
    %w[10 9 100].each { |k| db.set(k, "v") }
    db.close
    reopened = Tkrzw::DBM.new
    assert_true(reopened.open(file, true, key_comparator: "LexicalKeyComparator").ok?)
    iter = reopened.make_iterator
    iter.first
    assert_equal("9", iter.get_key)
    reopened.close
    assert_raise(Kuradb::InvalidArgumentError) { Kuradb::DBM.open(file, true, key_comparator: "LexicalKeyComparator") }
  end
end
