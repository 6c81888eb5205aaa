# frozen_string_literal: true

require_relative "helper"

# Kuradb::DBM: every public method, over the classes that matter.
class TestDBM < Test::Unit::TestCase
  include TempDir

  def test_open_with_block_closes_and_answers_the_block
    db_seen = nil
    answer = Kuradb::DBM.open(path("a.tkh"), true) do |db|
      db_seen = db
      db["k"] = "v"
      :done
    end
    assert_equal(:done, answer)
    assert_false(db_seen.open?)
    db = Kuradb::DBM.open(path("a.tkh"))
    assert_true(db.open?)
    assert_equal("v", db["k"])
    db.close
    db.close # a second close is harmless
  end

  def test_block_exception_still_closes
    db_seen = nil
    assert_raise(RuntimeError) do
      Kuradb::DBM.open(path("b.tkh"), true) do |db|
        db_seen = db
        raise "boom"
      end
    end
    assert_false(db_seen.open?)
  end

  def test_hash_like_methods
    %w[a.tkh a.tkt a.tks a.tkmt a.tkmb].each do |name|
      Kuradb::DBM.open(path(name), true, truncate: true) do |db|
        db["one"] = "1"
        db.store("two", "2")
        db.synchronize # a skip database shows its updates after this
        assert_equal(2, db.size, name)
        assert_equal(2, db.length)
        assert_equal(2, db.count)
        assert_false(db.empty?)
        assert_true(db.key?("one"))
        assert_true(db.include?("two"))
        assert_false(db.member?("three"))
        assert_equal("1", db["one"])
        assert_nil(db["three"])
        assert_equal("x", db.fetch("three", "x"))
        assert_equal("three!", db.fetch("three") { |k| "#{k}!" })
        assert_raise(KeyError) { db.fetch("three") }
        assert_equal("1", db.delete("one"))
        db.synchronize
        assert_nil(db.delete("one"))
        db.synchronize
        assert_equal({ "two" => "2" }, db.to_h)
        assert_equal(["two"], db.keys)
        assert_equal(["2"], db.values)
      end
    end
  end

  def test_each_enumerable_and_order
    Kuradb::DBM.open(path("e.tkt"), true) do |db|
      %w[c a b].each { |k| db[k] = k.upcase }
      seen = []
      assert_same(db, db.each { |k, v| seen << [k, v] })
      assert_equal([%w[a A], %w[b B], %w[c C]], seen)
      assert_equal(%w[a b c], db.map { |k, _| k })
      assert_equal(3, db.each.size)
      assert_equal(%w[b B], db.find { |k, _| k == "b" })
      assert_equal(%w[a b c], db.each_key.to_a)
      assert_equal(%w[A B C], db.each_value.to_a)
      assert_true(db.ordered?)
      # The block may use the database: records are read through a cursor.
      db.each { |k, _| db.remove(k) if k == "b" }
      assert_equal(%w[a c], db.keys)
    end
  end

  def test_binary_keys_and_values
    Kuradb::DBM.open(path("bin.tkh"), true) do |db|
      key = "\x00\xff\x80k".b
      value = (0..255).map(&:chr).join.b
      db[key] = value
      got = db[key]
      assert_equal(value, got)
      assert_equal(Encoding::ASCII_8BIT, got.encoding)
      assert_equal(256, got.bytesize)
      assert_equal([[key, value]], db.to_a)
      db["empty"] = ""
      assert_equal("", db["empty"])
    end
  end

  def test_encodings
    Kuradb::DBM.open(path("enc.tkh"), true) do |db|
      db["日本"] = "東京"
      raw = db["日本"]
      assert_equal(Encoding::ASCII_8BIT, raw.encoding)
      assert_equal("東京".b, raw)
      assert_equal("東京", raw.dup.force_encoding("UTF-8"))
      # The bytes are stored as they are, whatever the encoding.
      sjis = "東京".encode("Shift_JIS")
      db["sjis"] = sjis
      assert_equal(sjis.b, db["sjis"])
    end
    Kuradb::DBM.open(path("enc.tkh"), false, encoding: "UTF-8") do |db|
      value = db["日本"]
      assert_equal(Encoding::UTF_8, value.encoding)
      assert_equal("東京", value)
      assert_true(db.keys.include?("日本"))
      assert_true(db.keys.all? { |k| k.encoding == Encoding::UTF_8 })
    end
    assert_raise(ArgumentError) { Kuradb::DBM.open(path("enc.tkh"), false, encoding: "no-such") }
  end

  def test_set_get_remove_append_increment_cas
    Kuradb::DBM.open(path("ops.tkh"), true) do |db|
      assert_same(db, db.set("k", "v"))
      err = assert_raise(Kuradb::DuplicationError) { db.set("k", "w", overwrite: false) }
      assert_equal(:duplication, err.kind)
      assert_kind_of(Kuradb::Error, err)
      assert_equal("v", db.get("k"))
      assert_equal("v", db.set_and_get("k", "w"))
      assert_nil(db.set_and_get("new", "n"))
      assert_true(db.remove("new"))
      assert_false(db.remove("new"))
      assert_equal("w", db.remove_and_get("k"))
      db.append("log", "a").append("log", "b", ",")
      assert_equal("a,b", db["log"])
      assert_equal(5, db.increment("n", 5))
      assert_equal(7, db.increment("n", 2))
      assert_equal(7, db.increment("n", nil))
      assert_equal(107, db.increment("m", 7, 100))
      assert_equal([0, 0, 0, 0, 0, 0, 0, 7].pack("C*"), db["n"])
      assert_raise(Kuradb::InvalidArgumentError) { db.increment("log", 1) }
      assert_true(db.compare_exchange("c", nil, "1"))
      assert_false(db.compare_exchange("c", nil, "2"))
      assert_true(db.compare_exchange("c", "1", "2"))
      assert_equal("2", db["c"])
      assert_true(db.compare_exchange("c", "2", nil))
      assert_false(db.key?("c"))
    end
  end

  def test_multi_forms
    Kuradb::DBM.open(path("multi.tkh"), true) do |db|
      db.set_multi({ "a" => "1", "b" => "2" })
      assert_equal({ "a" => "1", "b" => "2" }, db.get_multi("a", "b", "zz"))
      assert_equal({ "a" => "1" }, db.get_multi(["a"]))
      assert_raise(Kuradb::DuplicationError) { db.set_multi({ "c" => "3", "a" => "9" }, overwrite: false) }
      assert_false(db.key?("c"), "a refused set_multi sets nothing")
      assert_true(db.compare_exchange_multi([["a", "1"], ["c", nil]], [["a", nil], ["c", "3"]]))
      assert_false(db.compare_exchange_multi([["a", "1"]], [["a", "x"]]))
      assert_equal({ "b" => "2", "c" => "3" }, db.to_h)
      assert_equal(2, db.remove_multi("b", "c", "d"))
      assert_true(db.empty?)
      assert_raise(TypeError) { db.get_multi(1) }
      assert_raise(ArgumentError) { db.compare_exchange_multi([["a"]], []) }
    end
  end

  def test_process
    Kuradb::DBM.open(path("proc.tkh"), true) do |db|
      db["k"] = "v"
      seen = nil
      db.process("k") do |key, value|
        seen = [key, value]
        "#{value}!"
      end
      assert_equal(%w[k v], seen)
      assert_equal("v!", db["k"])
      db.process("k") { nil }
      assert_equal("v!", db["k"])
      db.process("k") { true }
      assert_equal("v!", db["k"])
      db.process("absent") do |_, value|
        assert_nil(value)
        "made"
      end
      assert_equal("made", db["absent"])
      db.process("k") { false }
      assert_false(db.key?("k"))
      db.process("ro", false) { nil }
      assert_raise(Kuradb::InvalidArgumentError) { db.process("ro", false) { "no" } }
      assert_false(db.key?("ro"))
      assert_raise(ArgumentError) { db.process("k") }
      db.process_each { |key, value| key == "absent" ? value.upcase : nil }
      assert_equal("MADE", db["absent"])
      db.process_each { false }
      assert_true(db.empty?)
    end
  end

  def test_cursor
    Kuradb::DBM.open(path("cur.tkt"), true) do |db|
      (1..5).each { |i| db["k#{i}"] = "v#{i}" }
      cur = db.cursor
      cur.first
      assert_equal(%w[k1 v1], cur.get)
      assert_equal("k1", cur.key)
      assert_equal("v1", cur.value)
      cur.next
      assert_equal("k2", cur.key)
      cur.last
      assert_equal("k5", cur.key)
      cur.previous
      assert_equal("k4", cur.key)
      cur.jump("k3")
      assert_equal("k3", cur.key)
      cur.jump_lower("k3")
      assert_equal("k2", cur.key)
      cur.jump_lower("k3", true)
      assert_equal("k3", cur.key)
      cur.jump_upper("k3")
      assert_equal("k4", cur.key)
      cur.set("new4")
      assert_equal("new4", db["k4"])
      cur.remove
      assert_false(db.key?("k4"))
      assert_equal("k5", cur.key)
      cur.first
      assert_equal(%w[k1 k2 k3 k5], cur.map(&:first))
      assert_true(cur.live?)
      db.close
      assert_false(cur.live?)
      assert_raise(Kuradb::InfeasibleError) { cur.first }
    end
    Kuradb::DBM.open(path("cur.tkh"), true) do |db|
      db["a"] = "1"
      cur = db.cursor
      assert_raise(Kuradb::UnsupportedError) { cur.last }
    end
  end

  def test_housekeeping
    p = path("house.tkh")
    Kuradb::DBM.open(p, true, num_buckets: 10) do |db|
      100.times { |i| db["k#{i}"] = "v" * i }
      assert_equal(p, db.path)
      assert_true(db.file_size.positive?)
      assert_true(db.healthy?)
      assert_false(db.ordered?)
      assert_equal("hash", db.dbm_class)
      assert_includes([true, false], db.should_be_rebuilt?)
      assert_same(db, db.rebuild(num_buckets: 1000))
      details = db.inspect_details
      assert_kind_of(Hash, details)
      assert_equal("100", details.fetch("num_records", details["count"]).to_s) if details.key?("num_records")
      assert_match(/Kuradb::DBM hash path=.*count=100/, db.inspect)
      db.synchronize(true)
      db.copy_file_data(path("copy.tkh"))
      assert_equal(11, db.search("begin", "k1").size)
      assert_equal(3, db.search("begin", "k1", 3).size)
      assert_raise(Kuradb::InvalidArgumentError) { db.search("nosuchmode", "x") }
      Kuradb::DBM.open(path("dest.tkmb"), true) do |dest|
        db.export(dest)
        assert_equal(100, dest.count)
      end
      db.clear
      assert_equal(0, db.count)
    end
    Kuradb::DBM.open(path("copy.tkh")) { |copy| assert_equal(100, copy.count) }
    assert_equal(100, Kuradb::DBM.restore(path("copy.tkh"), path("restored.tkh")))
    assert_match(/closed/, Kuradb::DBM.new.inspect)
    Kuradb::DBM.open(nil, true, dbm: "baby") do |memory|
      memory["a"] = "1"
      assert_nil(memory.path)
      assert_equal("baby", memory.dbm_class)
    end
  end

  def test_params_and_errors
    assert_raise(Kuradb::InvalidArgumentError) { Kuradb::DBM.open(path("p.tkh"), true, no_such_param: 1) }
    assert_raise(TypeError) { Kuradb::DBM.open(path("p.tkh"), true, num_buckets: []) }
    err = assert_raise(Kuradb::NotFoundError) { Kuradb::DBM.open(path("missing.tkh"), false) }
    assert_equal(:not_found, err.kind)
    assert_match(/missing\.tkh/, err.message)
    Kuradb::DBM.open(path("ro.tkh"), true) { |db| db["a"] = "1" }
    Kuradb::DBM.open(path("ro.tkh"), false) do |db|
      assert_raise(Kuradb::InfeasibleError) { db["b"] = "2" }
      assert_equal("1", db["a"])
    end
    Kuradb::DBM.open(path("tree.tkt"), true, dbm: "tree", key_comparator: "decimal") do |db|
      %w[10 9 100].each { |k| db[k] = k }
      assert_equal(%w[9 10 100], db.keys)
    end
  end

  def test_version
    assert_match(/\A\d+\.\d+\.\d+/, Kuradb::VERSION)
  end
end
