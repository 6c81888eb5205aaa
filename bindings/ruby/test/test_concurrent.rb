# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# `concurrent: true`: calls that run no Ruby code release the VM lock, so
# other Ruby threads run while one is inside the core (docs/ruby.md,
# "Threads and the VM lock").
class TestConcurrent < Test::Unit::TestCase
  include TempDir

  RECORDS = 60_000

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Thread A rebuilds a large database (one long call into the core);
  # thread B calls get on the same database over and over, raising a flag
  # while it is in a call; thread C runs plain Ruby code, noting every
  # millisecond the time and B's flag. Answers [the rebuild's start and
  # end, C's notes]. Without +reader+ there is no thread B.
  def race(concurrent, reader: true)
    Kuradb::DBM.open(path("race.tkh"), true, num_buckets: RECORDS, concurrent: concurrent) do |db|
      db.set_multi((0...RECORDS).to_h { |i| [format("%08d", i), "v" * 100] })
      done = false
      in_get = false
      rebuild_at = nil
      gets = 0
      reader = Thread.new do
        until done || !reader
          in_get = true
          raise "wrong value" unless db.get("00000007") == "v" * 100

          in_get = false
          gets += 1
        end
      end
      notes = []
      watcher = Thread.new do
        until done
          notes << [now, in_get]
          sleep 0.001
        end
      end
      Thread.pass until (gets > 3 || !reader) && notes.size > 3 # both are running
      rebuilder = Thread.new do
        first = now
        db.rebuild(num_buckets: RECORDS * 2)
        rebuild_at = [first, now]
      ensure
        done = true
      end
      [rebuilder, reader, watcher].each(&:join)
      [rebuild_at, notes]
    end
  end

  # How many of C's +notes+ fall in the middle 60 % of (+from+, +to+) with
  # B in a get: at those moments A was inside the core (in the rebuild),
  # B was inside the core (in a get, running or waiting for the rebuild's
  # lock), and C was running Ruby code, so the VM lock was free.
  def inside(from, to, notes)
    margin = (to - from) * 0.2
    notes.count { |at, in_get| in_get && at > from + margin && at < to - margin }
  end

  # Fails if the VM lock were held inside the core: thread C could then
  # run no Ruby code while A is inside the rebuild.
  def test_two_threads_are_inside_the_core_at_once
    (from, to), notes = race(true)
    assert_operator(to - from, :>, 0.02, "the rebuild is long enough to measure")
    assert_operator(inside(from, to, notes), :>, 0,
                    "Ruby code ran while A rebuilt and B was in a get (#{notes.size} notes, rebuild #{to - from} s)")
  end

  # The control: without concurrent the VM lock stays held by the rebuild,
  # so thread C's notes stop for as long as the call runs. The rebuild's
  # start and end are taken in Ruby, around the call, and a thread switch
  # may fall between them and the call (a busy reader would hold the lock
  # for a whole time slice there), so the check is that C's longest pause
  # within them covers most of the span, where a released lock would leave
  # no pause longer than a few milliseconds.
  def test_without_concurrent_the_vm_lock_is_held
    (from, to), notes = race(false, reader: false)
    assert_operator(to - from, :>, 0.02, "the rebuild is long enough to measure")
    times = [from] + notes.map(&:first).select { |at| at > from && at < to } + [to]
    pause = times.each_cons(2).map { |a, b| b - a }.max
    assert_operator(pause, :>, (to - from) * 0.5, "no Ruby code ran during the rebuild (#{to - from} s)")
  end

  def test_results_stay_right_under_threads
    Kuradb::DBM.open(path("t.tkt"), true, concurrent: true) do |db|
      assert_true(db.concurrent?)
      threads = (0...4).map do |t|
        Thread.new do
          400.times do |i|
            key = format("%d-%04d", t, i)
            db[key] = key * 2
            raise "lost #{key}" unless db[key] == key * 2

            db.increment("counter", 1)
            db.append("log", t.to_s)
            db.remove_multi("#{key}-gone")
          end
        end
      end
      walker = Thread.new { 5.times.sum { db.cursor.tap(&:first).each.count { true } } }
      threads.each(&:join)
      walker.join
      assert_equal(1600, db.increment("counter", nil))
      assert_equal(1600, db["log"].size)
      assert_equal(400, db["log"].count("3"))
      assert_equal(1602, db.count)
      assert_equal(400, db.search("begin", "2-").size)
      keys = db.get_multi("0-0000", "3-0399")
      assert_equal({ "0-0000" => "0-00000-0000", "3-0399" => "3-03993-0399" }, keys)
    end
  end

  def test_blocks_still_run_with_the_lock_and_exclude_other_threads
    Kuradb::DBM.open(path("b.tkh"), true, concurrent: true) do |db|
      threads = (0...4).map do
        Thread.new do
          100.times do
            db.process("n") { |_, value| Thread.pass || ((value || "0").to_i + 1).to_s }
            db["other"] = "x" # runs between other threads' blocks
          end
        end
      end
      threads.each(&:join)
      assert_equal("400", db["n"])
      assert_raise(Kuradb::InfeasibleError) { db.process("n") { db["n"] } }
    end
  end

  # A close while other threads are in calls without the VM lock waits for
  # them or makes them fail cleanly: no deadlock, no crash.
  def test_close_while_other_threads_call
    db = Kuradb::DBM.open(path("c.tkh"), true, concurrent: true)
    db["k"] = "v"
    failures = Queue.new
    threads = (0...3).map do
      Thread.new do
        loop { db["k"] }
      rescue Kuradb::InfeasibleError => e
        failures << e
      end
    end
    sleep 0.02
    db.close
    threads.each(&:join)
    assert_equal(3, failures.size)
    assert_false(db.open?)
  end

  def test_a_flag_other_than_true_or_false_is_refused
    assert_raise(ArgumentError) { Kuradb::DBM.open(path("f.tkh"), true, concurrent: "yes") }
    status = Tkrzw::DBM.new.open(path("f.tkh"), true, concurrent: "yes")
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, status.code)
  end

  def test_tkrzw_concurrent_is_passed_on
    dbm = Tkrzw::DBM.new
    dbm.open(path("z.tkh"), true, concurrent: true).or_die
    assert_true(dbm.send(:opened).concurrent?)
    dbm.set("a", "1").or_die
    assert_equal("1", dbm.get("a"))
    dbm.close.or_die
    dbm.open(path("z.tkh"), false).or_die
    assert_false(dbm.send(:opened).concurrent?)
    dbm.close.or_die
  end
end
