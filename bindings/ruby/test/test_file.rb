# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# Kuradb::File and Tkrzw::File (kuradb's file layer), TextFile, and what
# DBM and AsyncDBM write into files: flat records and key lines.
class TestFile < Test::Unit::TestCase
  include TempDir

  def test_kuradb_file_reads_and_writes_at_offsets
    Kuradb::File.open(path("f.bin"), true, file: "pos-para", block_size: 512, access_options: "padding") do |f|
      assert_equal(0, f.append("hello"))
      assert_equal(5, f.append(" world"))
      f.write(0, "J")
      assert_equal("Jello world", f.read(0, 11))
      assert_equal(Encoding::ASCII_8BIT, f.read(0, 1).encoding)
      assert_raise(Kuradb::InfeasibleError) { f.read(5, 7) }
      f.truncate(5)
      assert_equal(5, f.size)
      f.synchronize(true)
      assert_equal("PositionalParallelFile", f.class_name)
      assert_equal(path("f.bin"), f.path)
    end
    assert_equal("Jello", File.binread(path("f.bin")))
    Kuradb::File.open(path("f.bin"), false, encoding: "UTF-8") do |f|
      assert_equal(Encoding::UTF_8, f.read(0, 5).encoding)
      assert_false(f.writable?)
      assert_raise(Kuradb::InfeasibleError) { f.append("x") }
    end
    assert_raise(Kuradb::InvalidArgumentError) { Kuradb::File.open(path("g.bin"), true, colour: "blue") }
    assert_raise(Kuradb::InvalidArgumentError) { Kuradb::File.open(path("g.bin"), true, file: "mmap-para", block_size: 512) }
    assert_raise(Kuradb::NotFoundError) { Kuradb::File.open(path("none.bin"), true, no_create: true) }
  end

  def test_search_of_lines
    File.binwrite(path("t.txt"), "tokyo\nosaka\r\nkyoto\nnagoya\n")
    Kuradb::File.open(path("t.txt")) do |f|
      assert_equal(%w[tokyo kyoto], f.search("contain", "yo"))
      assert_equal(%w[osaka], f.search("end", "ka"))
      assert_equal(%w[nagoya], f.search("regex", "^n.g"))
      assert_equal(%w[tokyo], f.search("begin", "to", 1))
      assert_equal(%w[kyoto], f.search("edit", "kyotx", 1))
      assert_raise(Kuradb::InvalidArgumentError) { f.search("upper", "k") }
    end
  end

  def test_tkrzw_file
    file = Tkrzw::File.new
    file.open(path("f.dat"), true, truncate: true, file: "PositionalAtomicFile").or_die
    assert_equal(Tkrzw::Status::PRECONDITION_ERROR, file.open(path("f.dat"), true).code)
    file.write(0, "0123").or_die
    assert_equal(4, file.append("4567"))
    status = Tkrzw::Status.new
    assert_equal("2345", file.read(2, 4, status))
    assert_true(status.ok?)
    assert_nil(file.read(6, 4, status))
    assert_equal(Tkrzw::Status::INFEASIBLE_ERROR, status.code)
    # Offsets past 64 bits are invalid arguments, as other bad ones are, not a raise.
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, file.write(2**64, "x").code)
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, file.truncate(2**64).code)
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, file.write(-1, "x").code)
    assert_nil(file.read(2**64, 1, status))
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, status.code)
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, file.write("zero", "x").code)
    file.truncate(6).or_die
    assert_equal(6, file.get_size)
    file.synchronize(true, 0, 2).or_die
    assert_equal(path("f.dat"), file.get_path)
    assert_match(/PositionalAtomicFile/, file.to_s)
    file.close.or_die
    assert_nil(file.get_size)
    assert_raise(RuntimeError) { file.read(0, 1) }
    assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, Tkrzw::File.new.open(path("none"), false).code)
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, Tkrzw::File.new.open(path("g"), true, file: "NoFile").code)
    default = Tkrzw::File.new
    default.open(path("d.dat"), true).or_die
    assert_match(/MemoryMapParallelFile/, default.to_s)
    default.close.or_die
    # The reference's StdFile is the positional file with a whole-file lock.
    default.open(path("d.dat"), true, file: "StdFile").or_die
    assert_match(/PositionalAtomicFile/, default.to_s)
    default.close.or_die
  end

  def test_flat_records_through_a_tkrzw_file
    dbm = Tkrzw::DBM.new
    dbm.open(path("src.tkh"), true).or_die
    10.times { |i| dbm.set("k#{i}", "v" * i).or_die }
    file = Tkrzw::File.new
    file.open(path("flat.dat"), true, truncate: true).or_die
    dbm.export_to_flat_records(file).or_die
    assert_operator(file.get_size, :>, 10 * 4)
    copy = Tkrzw::DBM.new
    copy.open(path("dest.tkt"), true).or_die
    copy.import_from_flat_records(file).or_die
    assert_equal(10, copy.count)
    assert_equal("vvvvvvvvv", copy.get("k9"))
    assert_equal("", copy.get("k0"))
    file.close.or_die
    lines = Tkrzw::File.new
    lines.open(path("keys.txt"), true, truncate: true).or_die
    copy.export_keys_as_lines(lines).or_die
    assert_equal(%w[k1 k5], lines.search("contain", "1").concat(lines.search("end", "5")))
    lines.close.or_die
    assert_equal((0...10).map { |i| "k#{i}\n" }.join, File.binread(path("keys.txt")))
    text = Tkrzw::TextFile.new
    text.open(path("keys.txt")).or_die
    assert_equal(%w[k3], text.search("edit", "k3", 1))
    assert_equal(%w[k0 k1], text.search("begin", "k", 2))
    text.close.or_die
    readonly = Tkrzw::File.new
    readonly.open(path("keys.txt"), false).or_die
    assert_false(dbm.export_to_flat_records(readonly).ok?)
    readonly.close.or_die
    assert_equal(Tkrzw::Status::NOT_FOUND_ERROR, copy.import_from_flat_records(path("none")).code)
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, copy.import_from_flat_records(42).code)
    dbm.close.or_die
    copy.close.or_die
  end

  def test_kuradb_flat_records_by_path
    Kuradb::DBM.open(path("a.tkh"), true) do |db|
      db.set_multi({ "x" => "1", "y" => "2" })
      db.export_to_flat_records(path("a.flat"))
      db.export_keys_as_lines(path("a.keys"))
    end
    assert_equal("x\ny\n", File.read(path("a.keys")).lines.sort.join)
    Kuradb::DBM.open(path("b.tkt"), true) do |db|
      assert_equal(2, db.import_from_flat_records(path("a.flat")))
      assert_equal({ "x" => "1", "y" => "2" }, db.to_h)
    end
  end

  def test_timestamp
    dbm = Tkrzw::DBM.new
    dbm.open(path("ts.tkh"), true).or_die
    dbm.set("a", "b").or_die
    dbm.synchronize(false).or_die
    stamp = dbm.timestamp
    assert_kind_of(Float, stamp)
    assert_in_delta(Time.now.to_f, stamp, 60)
    assert_equal(File.mtime(path("ts.tkh")).to_f, stamp)
    dbm.close.or_die
    dbm.open("", true).or_die
    assert_nil(dbm.timestamp)
    dbm.close.or_die
    dbm.open(path("sh.tkh"), true, num_shards: 3).or_die
    dbm.synchronize(false).or_die
    assert_kind_of(Float, dbm.timestamp)
    dbm.close.or_die
  end

  def test_async_copy_export_and_flat_records
    dbm = Tkrzw::DBM.new
    dbm.open(path("as.tkh"), true).or_die
    dest = Tkrzw::DBM.new
    dest.open(path("as-dest.tkt"), true).or_die
    adb = Tkrzw::AsyncDBM.new(dbm, 2)
    # The pool's two workers run tasks in any order: the sets are waited
    # for, so that the copy below is sure to see all five.
    5.times.map { |i| adb.set(i, i * 10) }.each { |future| future.get.or_die }
    adb.copy_file_data(path("copy.tkh")).get.or_die
    adb.export(dest).get.or_die
    file = Tkrzw::File.new
    file.open(path("as.flat"), true, truncate: true).or_die
    adb.export_to_flat_records(file).get.or_die
    adb.clear.get.or_die
    adb.import_from_flat_records(file).get.or_die
    assert_equal(Tkrzw::Status::INVALID_ARGUMENT_ERROR, adb.import_from_flat_records(nil).get.code)
    adb.destruct
    assert_equal(5, dbm.count)
    assert_equal("40", dbm.get(4))
    assert_equal(5, dest.count)
    file.close.or_die
    copy = Tkrzw::DBM.new
    copy.open(path("copy.tkh"), false).or_die
    assert_equal(5, copy.count)
    copy.close.or_die
    dest.close.or_die
    dbm.close.or_die
  end
end
