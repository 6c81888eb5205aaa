"""The reference's open parameters for a file not closed cleanly, the
tree's pages and the file class, through kuradb.compat.tkrzw
(docs/python.md, "Reference open parameters")."""

import pathlib
import shutil

from kuradb.compat import tkrzw


def _crashed(tmp_path: pathlib.Path, name: str, **params: str) -> str:
    """A copy of a database taken while its writer had it open, after a hard
    synchronization of "a"="synced" and a soft one of "a"="later", "b"."""
    path = str(tmp_path / name)
    dbm = tkrzw.DBM()
    assert dbm.Open(path, True, num_buckets=7, **params).IsOK()
    assert dbm.Set("a", "synced").IsOK()
    assert dbm.Synchronize(True).IsOK()
    assert dbm.Set("a", "later").IsOK() and dbm.Set("b", "later").IsOK()
    assert dbm.Synchronize(False).IsOK()
    copy = str(tmp_path / ("crashed-" + name))
    shutil.copy(path, copy)
    assert dbm.Close().IsOK()
    return copy


def test_restore_sync_goes_back_to_the_last_hard_synchronization(tmp_path: pathlib.Path) -> None:
    copy = _crashed(tmp_path, "log.tkh", update_mode="UPDATE_APPENDING")
    dbm = tkrzw.DBM()
    assert dbm.Open(copy, True, restore_mode="RESTORE_SYNC:RESTORE_NO_SHORTCUTS:RESTORE_WITH_HARDSYNC").IsOK()
    assert dbm.GetStr("a") == "synced" and dbm.GetStr("b") is None
    assert dbm.Close().IsOK()
    # A hash database updated in place keeps no synchronized state to go back to.
    status = tkrzw.DBM().Open(str(tmp_path / "inplace.tkh"), True, restore_mode="RESTORE_SYNC")
    assert status == tkrzw.Status.INVALID_ARGUMENT_ERROR and "in place" in status.GetMessage()


def test_restore_read_only_leaves_the_file_and_refuses_writes(tmp_path: pathlib.Path) -> None:
    copy = _crashed(tmp_path, "casket.tkt")
    before = pathlib.Path(copy).read_bytes()
    dbm = tkrzw.DBM()
    assert dbm.Open(copy, True, restore_mode="RESTORE_READ_ONLY").IsOK()
    assert dbm.GetStr("a") is not None
    assert not dbm.IsHealthy()
    assert dbm.Set("c", "new") == tkrzw.Status.PRECONDITION_ERROR
    assert dbm.Close().IsOK()
    assert pathlib.Path(copy).read_bytes() == before


def test_page_update_none_is_taken_and_write_is_refused(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "a.tkt"), True, page_update_mode="PAGE_UPDATE_NONE").IsOK()
    assert dbm.Close().IsOK()
    status = dbm.Open(str(tmp_path / "b.tkt"), True, page_update_mode="PAGE_UPDATE_WRITE")
    assert status == tkrzw.Status.INVALID_ARGUMENT_ERROR and "synchroniz" in status.GetMessage()


def test_the_file_class_is_the_references(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "a.tkh"), True).IsOK()
    assert dbm.Inspect()["file_class"] == "MemoryMapParallelFile"
    assert dbm.Close().IsOK()
    assert dbm.Open(str(tmp_path / "b.tkh"), True, file="StdFile").IsOK()
    assert dbm.Inspect()["file_class"] == "PositionalAtomicFile"
    assert dbm.Close().IsOK()


def test_padding_without_block_io_pads_nothing_as_the_references(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "a.tkh"), True, file="PositionalParallelFile", access_options="padding").IsOK()
    assert dbm.Close().IsOK()
    # Memory-mapped, padding is refused, as the reference's open refuses it.
    status = dbm.Open(str(tmp_path / "b.tkh"), True, access_options="padding")
    assert status == tkrzw.Status.INVALID_ARGUMENT_ERROR


def test_an_existing_file_of_no_known_extension_opens_as_its_head_says(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "casket.tkt"), True).IsOK()
    assert dbm.Set("k", "v").IsOK() and dbm.Close().IsOK()
    shutil.copy(tmp_path / "casket.tkt", tmp_path / "casket.data")
    assert dbm.Open(str(tmp_path / "casket.data"), True).IsOK()
    assert dbm.Inspect()["class"] == "TreeDBM" and dbm.GetStr("k") == "v"
    assert dbm.Close().IsOK()
    # A new file still needs an extension that names a class, or dbm.
    assert dbm.Open(str(tmp_path / "new.data"), True) == tkrzw.Status.INVALID_ARGUMENT_ERROR
