# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# Tkrzw::DBM#process and #process_each with the reference's conventions.
class TestTkrzwProcess < Test::Unit::TestCase
  include TempDir

  def test_process
    dbm = Tkrzw::DBM.new
    dbm.open(path("p.tkh"), true, concurrent: true).or_die
    dbm.process("a", true) { |_, value| value.nil? ? 1 : nil }.or_die
    assert_equal("1", dbm.get("a"))
    dbm.process("a", true) { |key, value| "#{key}#{value}" }.or_die
    assert_equal("a1", dbm.get("a"))
    dbm.process("a", true) { nil }.or_die
    assert_equal("a1", dbm.get("a"))
    dbm.process("a", true) { false }.or_die
    assert_nil(dbm.get("a"))
    assert_raise(ZeroDivisionError) { dbm.process("a", true) { 1 / 0 } }
    dbm.close.or_die
  end

  def test_process_each_sees_nil_before_and_after
    dbm = Tkrzw::DBM.new
    dbm.open(path("e.tkt"), true).or_die
    %w[a b c].each { |k| dbm.set(k, k * 2).or_die }
    seen = []
    dbm.process_each(true) do |key, value|
      seen << key
      next nil if key.nil?

      key == "b" ? false : value.upcase
    end.or_die
    assert_equal([nil, "a", "b", "c", nil], seen)
    assert_equal({ "a" => "AA", "c" => "CC" }, dbm.get_multi("a", "b", "c"))
    dbm.close.or_die
  end
end
