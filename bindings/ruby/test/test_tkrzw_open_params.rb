# frozen_string_literal: true

require_relative "helper"
require "tkrzw"

# The reference's open parameters for a file not closed cleanly, the tree's
# pages and the file class (docs/ruby.md, "Reference open parameters"), and
# the reopening of a file whose extension names no class.
class TestTkrzwOpenParams < Test::Unit::TestCase
  include TempDir
  include Tkrzw

  # A copy of a database taken while its writer had it open, after a hard
  # synchronization of "a" => "synced" and a soft one of "a" => "later", "b".
  def crashed(name, **params)
    dbm = DBM.new
    assert_equal(Status::SUCCESS, dbm.open(path(name), true, num_buckets: 7, **params))
    dbm.set("a", "synced").or_die
    dbm.synchronize(true).or_die
    dbm.set("a", "later").or_die
    dbm.set("b", "later").or_die
    dbm.synchronize(false).or_die
    copy = path("crashed-#{name}")
    FileUtils.cp(path(name), copy)
    dbm.close.or_die
    copy
  end

  def test_restore_sync_goes_back_to_the_last_hard_synchronization
    copy = crashed("log.tkh", update_mode: "UPDATE_APPENDING")
    dbm = DBM.new
    dbm.open(copy, true, restore_mode: "RESTORE_SYNC:RESTORE_WITH_HARDSYNC").or_die
    assert_equal(["synced", nil], [dbm.get("a"), dbm.get("b")])
    dbm.close.or_die
    status = DBM.new.open(path("inplace.tkh"), true, restore_mode: "RESTORE_SYNC")
    assert_equal(Status::INVALID_ARGUMENT_ERROR, status.code)
    assert_match(/in place/, status.message)
  end

  def test_restore_read_only_leaves_the_file_and_refuses_writes
    copy = crashed("casket.tkh")
    before = ::File.binread(copy)
    dbm = DBM.new
    dbm.open(copy, true, restore_mode: "RESTORE_READ_ONLY").or_die
    refute_nil(dbm.get("a"))
    assert_false(dbm.healthy?)
    assert_equal(Status::PRECONDITION_ERROR, dbm.set("c", "new").code)
    dbm.close.or_die
    assert_equal(before, ::File.binread(copy))
  end

  def test_page_update_none_is_taken_and_write_is_refused
    dbm = DBM.new
    dbm.open(path("a.tkt"), true, page_update_mode: "PAGE_UPDATE_NONE").or_die
    dbm.close.or_die
    status = dbm.open(path("b.tkt"), true, page_update_mode: "PAGE_UPDATE_WRITE")
    assert_equal(Status::INVALID_ARGUMENT_ERROR, status.code)
  end

  def test_the_file_class_is_the_references
    dbm = DBM.new
    dbm.open(path("a.tkh"), true).or_die
    assert_equal("MemoryMapParallelFile", dbm.inspect_details["file_class"])
    dbm.close.or_die
    dbm.open(path("b.tkh"), true, file: "StdFile").or_die
    assert_equal("PositionalAtomicFile", dbm.inspect_details["file_class"])
    dbm.close.or_die
    dbm.open(path("c.tkh"), true, file: "PositionalParallelFile", access_options: "padding").or_die
    dbm.close.or_die
    assert_equal(Status::INVALID_ARGUMENT_ERROR, dbm.open(path("d.tkh"), true, access_options: "padding").code)
  end

  def test_an_existing_file_of_no_known_extension_opens_as_its_head_says
    dbm = DBM.new
    dbm.open(path("casket.tkt"), true).or_die
    dbm.set("k", "v").or_die
    dbm.close.or_die
    FileUtils.cp(path("casket.tkt"), path("casket.data"))
    dbm.open(path("casket.data"), true).or_die
    assert_equal(["TreeDBM", "v"], [dbm.inspect_details["class"], dbm.get("k")])
    dbm.close.or_die
    assert_equal(Status::INVALID_ARGUMENT_ERROR, dbm.open(path("new.data"), true).code)
  end

  def test_opening_an_open_database_raises_as_the_references
    dbm = DBM.new
    dbm.open(path("a.tkh"), true).or_die
    assert_raise_message("opened database") { dbm.open(path("b.tkh"), true) }
    dbm.close.or_die
  end
end
