# frozen_string_literal: true

require_relative "helper"

# Ruby threads sharing one database. By default the VM lock stays held
# inside the core (docs/ruby.md), so the threads interleave rather than run
# in parallel; what matters is that every update lands and nothing
# deadlocks. test_concurrent.rb covers `concurrent: true`.
class TestThreads < Test::Unit::TestCase
  include TempDir

  def test_threads_share_one_database
    Kuradb::DBM.open(path("t.tkh"), true, num_buckets: 1000) do |db|
      threads = (0...4).map do |t|
        Thread.new do
          500.times do |i|
            key = "#{t}-#{i}"
            db[key] = key * 2
            raise "lost #{key}" unless db[key] == key * 2

            db.increment("counter", 1)
            Thread.pass if (i % 50).zero?
          end
        end
      end
      threads.each(&:join)
      assert_equal(2000, db.increment("counter", nil))
      assert_equal(2001, db.count)
    end
  end

  def test_a_thread_waits_while_another_is_inside_a_block
    Kuradb::DBM.open(path("w.tkh"), true) do |db|
      db["k"] = "0"
      inside = Queue.new
      release = Queue.new
      blocker = Thread.new do
        db.process("k") do |_, value|
          inside << true
          release.pop # other threads run now, with the record locked
          (value.to_i + 1).to_s
        end
      end
      inside.pop
      reader = Thread.new { db["k"] } # must wait for the block, not deadlock
      sleep 0.05
      assert_true(reader.alive?, "the reader waits while the block runs")
      release << true
      assert_equal("1", reader.value)
      blocker.join
    end
  end

  def test_process_from_many_threads_is_atomic
    Kuradb::DBM.open(path("p.tkt"), true) do |db|
      threads = (0...4).map do
        Thread.new do
          200.times do
            db.process("n") do |_, value|
              Thread.pass # invite a switch inside the block
              ((value || "0").to_i + 1).to_s
            end
          end
        end
      end
      threads.each(&:join)
      assert_equal("800", db["n"])
    end
  end
end
