# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# Kuradb::Index and Tkrzw::Index: secondary indexes over kuradb::index.
class TestIndex < Test::Unit::TestCase
  include TempDir

  def fill(index)
    index.add("general", "anne")
    index.add("general", "matthew")
    index.add("general", "marilla")
    index.add("sales", "gilbert")
  end

  def test_file_index_keeps_its_pairs
    Kuradb::Index.open(path("i.kti"), true) do |index|
      fill(index)
      assert_true(index.remove("general", "anne"))
      assert_false(index.remove("general", "anne"))
      index.add("sales", "anne")
      assert_equal(%w[marilla matthew], index.get_values("general"))
      assert_equal(%w[anne], index.get_values("sales", 1))
      assert_true(index.include?("sales", "gilbert"))
      assert_false(index.include?("sales", "matthew"))
      assert_equal(4, index.count)
      assert_equal(path("i.kti"), index.path)
    end
    Kuradb::Index.open(path("i.kti"), false) do |index|
      assert_false(index.writable?)
      assert_equal([%w[general marilla], %w[general matthew], %w[sales anne], %w[sales gilbert]], index.to_a)
      assert_raise(Kuradb::InfeasibleError) { index.add("x", "y") }
    end
  end

  def test_memory_index_and_its_cursor
    index = Kuradb::Index.open(nil, true, key_comparator: "PairDecimalKeyComparator")
    assert_nil(index.path)
    %w[10 9 100].each { |k| index.add(k, "v#{k}") }
    cur = index.cursor
    cur.first
    assert_equal(%w[9 v9], cur.get)
    cur.last
    assert_equal(%w[100 v100], cur.get)
    cur.jump("10")
    assert_equal(%w[10 v10], cur.get)
    cur.previous
    assert_equal(%w[9 v9], cur.get)
    cur.jump("10", "w")
    assert_equal(%w[100 v100], cur.get)
    index.clear
    assert_equal(0, index.count)
    index.close
    assert_false(cur.live?)
    assert_raise(Kuradb::InfeasibleError) { cur.first }
    assert_raise(Kuradb::InfeasibleError) { index.count }
    assert_raise(Kuradb::InvalidArgumentError) { Kuradb::Index.open(nil, true, num_buckets: 10) }
    assert_raise(Kuradb::InvalidArgumentError) { Kuradb::Index.open(nil, true, key_comparator: "LexicalKeyComparator") }
  end

  def test_concurrent_index
    Kuradb::Index.open(path("c.kti"), true, concurrent: true) do |index|
      threads = (0...4).map { |t| Thread.new { 200.times { |i| index.add("k#{t}", format("%03d", i)) } } }
      threads.each(&:join)
      assert_equal(800, index.count)
      assert_equal(200, index.get_values("k2").size)
    end
  end

  # As the reference's example5.rb does it.
  def test_tkrzw_index
    index = Tkrzw::Index.new
    index.open(path("casket.tkt"), true, truncate: true, num_buckets: 100).or_die
    assert_true(index.open?)
    assert_true(index.writable?)
    assert_equal(Tkrzw::Status::PRECONDITION_ERROR, index.open(path("x.tkt"), true).code)
    fill(index)
    index.remove("general", "anne").or_die
    assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, index.remove("general", "anne").code)
    index.add("sales", "anne").or_die
    assert_equal(%w[marilla matthew], index.get_values("general"))
    assert_equal(%w[anne gilbert], index.get_values("sales"))
    assert_true(index.include?("sales", "anne"))
    assert_true(index.include?("sales"))
    assert_false(index.include?("marketing"))
    assert_equal(4, index.count)
    assert_equal(4, index.to_i)
    assert_equal(path("casket.tkt"), index.file_path)
    iter = index.make_iterator
    iter.first
    seen = []
    while (record = iter.get)
      seen << record.join(": ")
      iter.next
    end
    iter.destruct
    assert_equal(["general: marilla", "general: matthew", "sales: anne", "sales: gilbert"], seen)
    iter = index.make_iterator
    iter.jump("sales")
    assert_equal(%w[sales anne], iter.get)
    iter.last
    assert_equal(%w[sales gilbert], iter.get)
    iter.previous
    assert_match(/sales.*anne/, iter.to_s)
    each = []
    index.each { |key, value| each << [key, value] }
    assert_equal(4, each.size)
    index.synchronize(false).or_die
    index.rebuild.or_die
    index.clear.or_die
    assert_equal(0, index.count)
    assert_match(/casket.tkt/, index.to_s)
    index.close.or_die
    assert_false(index.open?)
    assert_raise(RuntimeError) { index.count }
    assert_equal("#<Tkrzw::Index:(unopened)>", index.to_s)
  end

  def test_tkrzw_memory_index
    index = Tkrzw::Index.new
    index.open("", true).or_die
    index.add(1, 2).or_die
    assert_equal(["2"], index.get_values(1))
    assert_equal("", index.file_path)
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, Tkrzw::Index.new.open("", true, max_branches: 3).code)
    index.close.or_die
  end
end
