# frozen_string_literal: true

require_relative "helper"
require "open3"
require "tkrzw"

# Waiting on a future releases Ruby's VM lock, and an interrupt ends the
# wait. Each test waits on an operation that cannot finish until the test
# lets it (a pop on an empty queue, a record lock held by a block), so what
# it checks does not depend on the machine's speed: only the bound of a
# second on 2,000 Thread.pass calls does, and that takes milliseconds when
# the lock is free (each pass cost about 3 ms when a waiter held the lock
# in 1 ms slices).
class TestFutureWait < Test::Unit::TestCase
  include TempDir

  PASSES = 2000

  # A thread that passes PASSES times; whether it finished within a second.
  def passes_freely
    steps = 0
    runner = Thread.new { PASSES.times { steps += 1; Thread.pass } }
    finished = !runner.join(1.0).nil?
    runner.join
    assert_equal(PASSES, steps)
    finished
  end

  # Yields an open DBM and the future of a pop on it that waits up to 30 s
  # for a push.
  def waiting_pop(name)
    Kuradb::DBM.open(path(name), true) do |db|
      Kuradb::AsyncDBM.new(db, 1) do |adb|
        yield db, adb.pop_first(retry_wait: 30)
      end
    end
  end

  def wait_until_asleep(thread)
    Thread.pass until thread.status == "sleep" || !thread.alive?
  end

  def test_other_threads_run_while_a_future_waits_for_a_push
    waiting_pop("q.tkh") do |db, future|
      waiter = Thread.new { future.get }
      wait_until_asleep(waiter)
      assert_true(passes_freely, "a thread waiting on a future kept the VM lock")
      assert_false(future.wait(0.05))
      db.push_last("job")
      assert_equal("job", waiter.value[1])
    end
  end

  def test_other_threads_run_while_a_tkrzw_future_waits_for_a_record_lock
    dbm = Tkrzw::DBM.new
    assert_true(dbm.open(path("r.tkh"), true).ok?)
    async = Tkrzw::AsyncDBM.new(dbm, 1)
    inside = Queue.new
    leave = Queue.new
    holder = Thread.new do
      dbm.process("k", true) do
        inside << true
        leave.pop
        "held"
      end
    end
    inside.pop
    future = async.set("k", "async")
    waiter = Thread.new { future.get }
    wait_until_asleep(waiter)
    assert_true(passes_freely, "a thread waiting on a Tkrzw::Future kept the VM lock")
    assert_false(future.wait(0))
    leave << true
    holder.join
    assert_equal(Tkrzw::Status::SUCCESS, waiter.value)
    assert_equal("async", dbm.get("k"))
    async.destruct
    dbm.close
  end

  def test_raise_and_kill_end_a_wait_and_the_future_still_answers
    waiting_pop("i.tkh") do |db, future|
      raised = Thread.new { future.get }
      raised.report_on_exception = false
      wait_until_asleep(raised)
      raised.raise(ArgumentError, "stop waiting")
      assert_raise_message("stop waiting") { raised.join(10) || flunk("Thread#raise did not end the wait") }
      killed = Thread.new { future.wait }
      wait_until_asleep(killed)
      killed.kill
      assert_not_nil(killed.join(10), "Thread#kill did not end the wait")
      # A wakeup is no interrupt: the wait goes on.
      woken = Thread.new { future.wait }
      wait_until_asleep(woken)
      woken.wakeup
      assert_nil(woken.join(0.2))
      db.push_last("late")
      assert_true(woken.value)
      assert_equal("late", future.get[1])
    end
  end

  def test_a_wait_with_no_limit_or_an_endless_one
    waiting_pop("t.tkh") do |db, future|
      assert_false(future.wait(0.01))
      pusher = Thread.new { sleep 0.05; db.push_last("x") }
      # An endless timeout is no limit (it used to be a panic).
      assert_true(future.wait(Float::INFINITY))
      pusher.join
      assert_true(future.wait(0))
    end
  end

  def test_close_waits_for_a_pop_without_the_vm_lock
    Kuradb::DBM.open(path("c.tkh"), true) do |db|
      adb = Kuradb::AsyncDBM.new(db, 1)
      future = adb.pop_first(retry_wait: 30)
      pusher = Thread.new { sleep 0.1; db.push_last("last") }
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      adb.close # waits for the pop, which waits for the pusher
      assert_operator(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 10)
      pusher.join
      assert_equal("last", future.get[1])
    end
  end

  def test_ctrl_c_ends_a_wait_on_a_future
    lib = File.expand_path("../lib", __dir__)
    script = <<~RUBY
      require "kuradb"
      trap("INT") { raise Interrupt } # a shell without job control ignores SIGINT in background jobs
      Kuradb::DBM.open(ARGV[0], true) do |db|
        Kuradb::AsyncDBM.new(db, 1) do |adb|
          future = adb.pop_first(retry_wait: 20)
          $stdout.puts("waiting")
          $stdout.flush
          begin
            future.get
            puts "not interrupted"
          rescue Interrupt
            puts "interrupted"
          end
          db.push_last("x") # ends the pop, which the AsyncDBM's close waits for
        end
      end
    RUBY
    Open3.popen2(RbConfig.ruby, "-I", lib, "-e", script, path("c.tkh")) do |stdin, stdout, thread|
      stdin.close
      assert_equal("waiting\n", stdout.gets)
      sleep 0.2 # into the wait
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      Process.kill(:INT, thread.pid)
      assert_equal("interrupted\n", stdout.gets)
      assert_true(thread.value.success?)
      assert_operator(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 10)
    end
  end
end
