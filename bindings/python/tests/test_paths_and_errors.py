"""Paths as str, bytes or os.PathLike everywhere, and errors that are
OSErrors: a missing file a FileNotFoundError, a locked one a BlockingIOError."""

from __future__ import annotations

import errno
import os
import pathlib
import shelve

import pytest

import kuradb
import kuradb.dbm
from kuradb.compat import tkrzw


class Where(os.PathLike):
    """An os.PathLike that is neither str nor pathlib."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path


def spellings(path: pathlib.Path):
    return [str(path), os.fsencode(str(path)), path, Where(str(path))]


@pytest.mark.parametrize("kind", ["str", "bytes", "pathlib", "pathlike"])
def test_every_path_spelling_opens_the_same_database(tmp_path: pathlib.Path, kind: str) -> None:
    index = ["str", "bytes", "pathlib", "pathlike"].index(kind)
    target = tmp_path / "casket.kt"
    path = spellings(target)[index]
    with kuradb.DBM(path, True) as db:
        db["k"] = "v"
        assert db.dbm_class() == "tree"
        db.copy_file_data(spellings(tmp_path / "copy.kt")[index])
        db.export_to_flat_records(spellings(tmp_path / "flat")[index])
    assert kuradb.DBM.class_for_path(path) == "tree"
    assert kuradb.DBM.restore(path, spellings(tmp_path / "restored.kt")[index]) == 1
    db = kuradb.DBM()
    db.open(path, False)
    assert db["k"] == b"v"
    db.close()
    for name in ("copy.kt", "restored.kt"):
        with kuradb.DBM(tmp_path / name) as again:
            assert again["k"] == b"v"
    with kuradb.DBM(tmp_path / "imported.kh", True) as other:
        assert other.import_from_flat_records(spellings(tmp_path / "flat")[index]) == 1
    with kuradb.Index(spellings(tmp_path / "index.kt")[index], True) as index_db:
        index_db.add("k", "v")
        assert index_db.get_values("k") == [b"v"]

    with kuradb.dbm.open(spellings(tmp_path / "std.kh")[index], "c") as std:
        std["k"] = "v"
    with kuradb.dbm.open(path, "r") as std:
        assert std["k"] == b"v"

    dbm = tkrzw.DBM()
    assert dbm.Open(spellings(tmp_path / "compat.tkh")[index], True).IsOK()
    assert dbm.Set("k", "v").IsOK()
    assert dbm.CopyFileData(spellings(tmp_path / "compat-copy.tkh")[index]).IsOK()
    dbm.Close().OrDie()
    file = tkrzw.File()
    assert file.Open(spellings(tmp_path / "file.bin")[index], True).IsOK()
    assert file.GetPath() == str(tmp_path / "file.bin")
    file.Close()


def test_a_path_of_another_type_is_a_type_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(TypeError, match="str, bytes or os.PathLike"):
        kuradb.DBM(42, True)


def test_errors_are_oserrors(tmp_path: pathlib.Path) -> None:
    assert issubclass(kuradb.Error, OSError)
    for name in kuradb.__all__:
        thing = getattr(kuradb, name)
        if isinstance(thing, type) and name.endswith("Error"):
            assert issubclass(thing, kuradb.Error), name
    with kuradb.DBM(tmp_path / "a.kh", True) as db:
        db.set("a", "b")
        with pytest.raises(OSError):
            db.set("a", "c", overwrite=False)


def test_a_missing_file_is_a_file_not_found_error(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "missing.kh"
    with pytest.raises(FileNotFoundError) as caught:
        kuradb.DBM(missing, False)
    error = caught.value
    assert isinstance(error, kuradb.NoSuchFileError)
    assert isinstance(error, kuradb.NotFoundError) and isinstance(error, kuradb.Error)
    assert error.errno == errno.ENOENT and "missing.kh" in str(error)
    with pytest.raises(FileNotFoundError):
        kuradb.DBM(tmp_path / "no-such-dir" / "x.kh", True)
    # A missing record is a NotFoundError, not a missing file.
    with kuradb.DBM(tmp_path / "t.kh", True) as db:
        with pytest.raises(kuradb.NotFoundError) as caught_record:
            db.make_iterator().jump("no such key")
        assert not isinstance(caught_record.value, FileNotFoundError)


def test_a_locked_file_is_a_blocking_io_error(tmp_path: pathlib.Path) -> None:
    assert issubclass(kuradb.WouldBlockError, BlockingIOError)
    path = tmp_path / "held.kh"
    with kuradb.DBM(path, True):
        with pytest.raises(BlockingIOError) as caught:
            kuradb.DBM(path, True)
        assert isinstance(caught.value, kuradb.WouldBlockError)
        assert "already open" in str(caught.value)


def test_shelve_over_kuradb_dbm(tmp_path: pathlib.Path) -> None:
    # The README's recipe: shelve.open cannot find kuradb, shelve.Shelf takes it.
    with shelve.Shelf(kuradb.dbm.open(tmp_path / "shelf.kh", "c")) as shelf:
        shelf["fruits"] = ["apple", "pear"]
    with shelve.Shelf(kuradb.dbm.open(tmp_path / "shelf.kh", "r")) as shelf:
        assert shelf["fruits"] == ["apple", "pear"]
