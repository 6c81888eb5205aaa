# frozen_string_literal: true

require_relative "helper"

# Expiry (time to live): a database opened with expiry: true.
class TestExpiry < Test::Unit::TestCase
  include TempDir

  def test_set_with_a_ttl_reads_back_and_expires
    Kuradb::DBM.open(path("sessions.tkt"), true, expiry: true) do |db|
      assert_true(db.expiry?)
      db.set("session", "alice", ttl: 0.2)
      db.set("config", "kept")
      left = db.ttl("session")
      assert_true(left.positive? && left <= 0.2, left.to_s)
      assert_nil(db.ttl("config"))
      assert_nil(db.expiry("config"))
      assert_in_delta(Time.now.to_f + 0.2, db.expiry("session").to_f, 5)
      assert_raise(KeyError) { db.ttl("missing") }
      sleep 0.3
      assert_nil(db.get("session"))
      assert_raise(KeyError) { db.ttl("session") }
      assert_equal(1, db.count)
    end
  end

  def test_expire_persist_and_bad_times
    Kuradb::DBM.open(path("casket.tkh"), true, expiry: true) do |db|
      db.set("k", "v")
      assert_true(db.expire("k", 100))
      assert_true(db.ttl("k") > 99)
      assert_true(db.persist("k"))
      assert_false(db.persist("k"))
      assert_false(db.expire("absent", 1))
      assert_true(db.expire_at("k", Time.now + 50))
      assert_true(db.ttl("k").between?(40, 50.01))
      assert_raise(Kuradb::DuplicationError) { db.set("k", "w", overwrite: false, ttl: 5) }
      assert_equal("v", db.get("k"))
      [-1, Float::NAN, Float::INFINITY].each do |bad|
        error = assert_raise(Kuradb::InvalidArgumentError) { db.set("k", "v", ttl: bad) }
        assert_match(/time to live/, error.message)
      end
      assert_raise(Kuradb::InvalidArgumentError) { db.expire_at("k", -5) }
      assert_true(db.expire("k", 0))
      assert_nil(db.get("k"))
    end
  end

  def test_sweep_and_the_background_sweeper
    Kuradb::DBM.open(path("swept.tkt"), true, expiry: true) do |db|
      30.times { |i| db.set("gone#{i}", "x", ttl: 0.02) }
      db.set("stays", "y")
      sleep 0.06
      removed = 0
      loop do
        report = db.sweep(7)
        removed += report[:removed]
        break if report[:finished_pass]
      end
      assert_equal(30, removed)
      assert_raise(Kuradb::InvalidArgumentError) { db.sweep(0) }
      db.start_sweeper(100_000)
      assert_raise(Kuradb::InfeasibleError) { db.start_sweeper(10) }
      assert_true(db.stop_sweeper >= 0)
      assert_nil(db.stop_sweeper)
      db.start_sweeper(10) # close stops it
    end
  end

  def test_a_database_without_expiry_says_so
    Kuradb::DBM.open(path("plain.tkh"), true) do |db|
      db.set("k", "v")
      assert_false(db.expiry?)
      error = assert_raise(Kuradb::InfeasibleError) { db.set("k", "v", ttl: 5) }
      assert_match(/expiry=true/, error.message)
      assert_raise(Kuradb::InfeasibleError) { db.ttl("k") }
    end
  end
end
