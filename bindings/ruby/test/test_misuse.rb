# frozen_string_literal: true

require_relative "helper"

# Misuse raises a Ruby exception; it never crashes the interpreter.
class TestMisuse < Test::Unit::TestCase
  include TempDir

  def test_closed_database_raises
    db = Kuradb::DBM.open(path("c.tkh"), true)
    db.close
    assert_raise(Kuradb::InfeasibleError) { db["k"] }
    assert_raise(Kuradb::InfeasibleError) { db["k"] = "v" }
    assert_raise(Kuradb::InfeasibleError) { db.count }
    assert_raise(Kuradb::InfeasibleError) { db.each { nil } }
    assert_raise(Kuradb::InfeasibleError) { db.process("k") { nil } }
    assert_raise(Kuradb::InfeasibleError) { db.cursor }
    never_opened = Kuradb::DBM.new
    assert_raise(Kuradb::InfeasibleError) { never_opened.get("k") }
  end

  def test_open_twice_raises
    db = Kuradb::DBM.open(path("twice.tkh"), true)
    assert_raise(Kuradb::InfeasibleError) { db.open(path("other.tkh"), true) }
    db.close
  end

  def test_wrong_types_raise_type_error
    Kuradb::DBM.open(path("t.tkh"), true) do |db|
      assert_raise(TypeError) { db[1] }
      assert_raise(TypeError) { db["k"] = 1 }
      assert_raise(TypeError) { db[nil] = "v" }
      assert_raise(TypeError) { db.key?(:sym) }
      assert_raise(TypeError) { db.increment("n", "one") }
      assert_raise(TypeError) { db.compare_exchange("k", 1, "v") }
      assert_raise(TypeError) { db.set_multi({ "k" => 2 }) }
      assert_raise(TypeError) { db.export("not a database") }
      assert_raise(TypeError) { db.process("k") { 42 } }
      assert_false(db.key?("k"), "a block answering a wrong type leaves the record")
      assert_raise(RangeError) { db.increment("n", 2**64) }
    end
  end

  def test_exception_inside_process_reaches_the_caller
    Kuradb::DBM.open(path("e.tkh"), true) do |db|
      db["k"] = "v"
      err = assert_raise(ZeroDivisionError) { db.process("k") { 1 / 0 } }
      assert_match(/divided/, err.message)
      assert_equal("v", db["k"], "the record is left as it was")
      assert_raise(KeyError) { db.process_each { raise KeyError, "stop" } }
      # break and throw leave the block too, and the lock is released.
      db.process("k") { break }
      caught = catch(:out) { db.process("k") { throw :out, :thrown } }
      assert_equal(:thrown, caught)
      db["k"] = "w"
      assert_equal("w", db["k"])
    end
  end

  def test_database_used_inside_its_own_block_raises
    Kuradb::DBM.open(path("r.tkh"), true) do |db|
      db["k"] = "v"
      err = assert_raise(Kuradb::InfeasibleError) { db.process("k") { db["other"] } }
      assert_match(/inside one of its own process blocks/, err.message)
      assert_raise(Kuradb::InfeasibleError) { db.process("k") { db.close } }
      assert_true(db.open?)
      # Another database is fine.
      Kuradb::DBM.open(path("other.tkh"), true) do |other|
        db.process("k") { |_, v| other["copy"] = v; nil }
        assert_equal("v", other["copy"])
      end
    end
  end

  def test_export_into_itself_raises
    Kuradb::DBM.open(path("x.tkh"), true) do |db|
      assert_raise(Kuradb::InvalidArgumentError) { db.export(db) }
    end
  end

  def test_cursor_cannot_be_made_directly
    assert_raise(NoMethodError, TypeError) { Kuradb::Cursor.new }
  end
end
