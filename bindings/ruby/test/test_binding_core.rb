# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# What the binding core gives the Ruby layers: the reference's status codes
# from error kinds, its parameters translated, synchronize with parameters.
class TestBindingCore < Test::Unit::TestCase
  include TempDir

  def test_a_write_to_a_reader_is_a_precondition_error
    Kuradb::DBM.open(path("r.tkh"), true) { |db| db["k"] = "v" }
    Kuradb::DBM.open(path("r.tkh"), false) do |db|
      err = assert_raise(Kuradb::InfeasibleError) { db["x"] = "y" }
      assert_equal(Tkrzw::Status::PRECONDITION_ERROR, err.status_code)
    end
    dbm = Tkrzw::DBM.new
    dbm.open(path("r.tkh"), false).or_die
    assert_equal(Tkrzw::Status::PRECONDITION_ERROR, dbm.set("x", "y").code)
    dbm.close.or_die
  end

  def test_the_references_parameters_are_translated
    got = Kuradb._rebuild_params([["concurrent", "true"], ["access_options", "padding:pagecache"],
                                  ["record_comp_mode", "RECORD_COMP_AES"], ["cipher_key", "k"],
                                  ["max_page_size", "10"], ["fbp_capacity", "5"]])
    assert_equal([["access_options", "padding+pagecache"], ["cipher_key", "k"], ["max_page_size", "64"]], got)
    opening = Kuradb._compat_open_params(path("n.tkt"), [["key_comparator", "DecimalKeyComparator"]])
    assert_equal([["key_comparator", "DecimalKeyComparator"], ["no_wait", "false"]], opening)
    dbm = Tkrzw::DBM.new
    status = dbm.open(path("c.tkh"), true, record_comp_mode: "RECORD_COMP_RC4", cipher_key: "k")
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, status.code)
    dbm.open(path("p.tkh"), true, file: "pos-para", block_size: 512, access_options: "padding:pagecache").or_die
    dbm.set("a", "1").or_die
    dbm.close.or_die
    tree = Tkrzw::DBM.new
    tree.open(path("t.tkt"), true, max_page_size: 32).or_die
    tree.set("a", "1").or_die
    tree.close.or_die
  end

  def test_synchronize_merges_and_reduces_a_skip_database
    other = Tkrzw::DBM.new
    other.open(path("b.tks"), true).or_die
    other.set("k", "from b").or_die
    other.set("only b", "1").or_die
    other.close.or_die
    dbm = Tkrzw::DBM.new
    dbm.open(path("a.tks"), true).or_die
    dbm.set("k", "from a").or_die
    dbm.synchronize(false, merge: path("b.tks"), reducer: "ReduceToFirst").or_die
    assert_equal(2, dbm.count)
    assert_equal("1", dbm.get("only b"))
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, dbm.synchronize(false, speed: "fast").code)
    dbm.close.or_die
  end

  def test_utility_serializes_numbers_big_endian
    assert_equal("\x00\x00\x00\x00\x00\x00\x01\x00".b, Tkrzw::Utility.serialize_int(256))
    assert_equal(-5, Tkrzw::Utility.deserialize_int(Tkrzw::Utility.serialize_int(-5)))
    assert_equal(255, Tkrzw::Utility.deserialize_int("\xff".b))
    assert_equal(Encoding::ASCII_8BIT, Tkrzw::Utility.serialize_float(1.5).encoding)
    assert_equal(-2.25, Tkrzw::Utility.deserialize_float(Tkrzw::Utility.serialize_float(-2.25)))
    assert_true(Tkrzw::Utility.deserialize_float("abc").nan?)
  end

  def test_a_write_to_a_file_opened_for_reading_is_a_precondition_error
    file = Tkrzw::File.new
    file.open(path("f.dat"), true).or_die
    file.write(0, "abc").or_die
    file.close.or_die
    file.open(path("f.dat"), false).or_die
    assert_equal(Tkrzw::Status::PRECONDITION_ERROR, file.write(0, "x").code)
    assert_equal(Tkrzw::Status::PRECONDITION_ERROR, file.truncate(1).code)
    file.close.or_die
  end
end
