"""The record calls of kuradb.compat.tkrzw.DBM (Get, GetStr, Set, Remove,
the dict protocol) and its Status are native (src/compat.rs): the edges
where that code could part from the Python methods it replaced."""

from __future__ import annotations

import pathlib
import types

import pytest

from kuradb.compat import tkrzw


@pytest.fixture
def dbm(tmp_path: pathlib.Path):
    db = tkrzw.DBM()
    db.Open(str(tmp_path / "casket.tkh"), True, num_buckets=100).OrDie()
    yield db
    if db.IsOpen():
        db.Close().OrDie()


def test_the_record_calls_are_native() -> None:
    # A Python method would run an interpreter frame per call.
    for name in ["Get", "GetStr", "Set", "Remove", "__getitem__", "__setitem__", "__delitem__", "__contains__"]:
        assert not isinstance(getattr(tkrzw.DBM, name), types.FunctionType), name
    assert not isinstance(tkrzw.Status.__init__, types.FunctionType)


def test_get_sets_the_status_argument(dbm: tkrzw.DBM) -> None:
    dbm.Set("k", "v").OrDie()
    status = tkrzw.Status(tkrzw.Status.SYSTEM_ERROR, "old")
    assert dbm.Get("k", status) == b"v" and status == tkrzw.Status.SUCCESS and status.GetMessage() == ""
    assert dbm.Get("nope", status) is None and status == tkrzw.Status.NOT_FOUND_ERROR
    assert dbm.GetStr("k", status) == "v" and status.IsOK()
    assert dbm.Get("k", None) == b"v"

    class Recording(tkrzw.Status):
        """A Status whose Set the call must use, as the Python method did."""

        calls: list = []

        def Set(self, code: int = 0, message: str = "") -> None:
            Recording.calls.append((code, message))
            super().Set(code, message)

    mine = Recording()
    assert dbm.Get("nope", mine) is None and Recording.calls == [(tkrzw.Status.NOT_FOUND_ERROR, "")]


def test_get_reports_an_error_in_the_status(dbm: tkrzw.DBM) -> None:
    dbm.Set("k", "v").OrDie()
    seen = []
    status = tkrzw.Status()

    def inside(key: bytes, value: bytes) -> None:
        # The record is locked: a call back into the database is refused.
        seen.append(dbm.Get("k", status))

    assert dbm.Process("k", inside, False).IsOK()
    assert seen == [None] and status == tkrzw.Status.INFEASIBLE_ERROR and "callback" in status.GetMessage()


def test_keys_and_values_of_every_type(dbm: tkrzw.DBM) -> None:
    assert dbm.Set(7, 7.5).IsOK() and dbm.Get("7") == b"7.5" and dbm.Get(7) == b"7.5"
    assert dbm.Set(bytearray(b"ba"), memoryview(b"mv")).IsOK() and dbm.Get(b"ba") == b"mv"
    assert dbm.Set("日本", "東京").IsOK() and dbm.Get("日本".encode()) == "東京".encode()
    assert dbm.GetStr("日本") == "東京" and dbm["日本"] == "東京" and dbm["日本".encode()] == "東京".encode()
    assert dbm.Set("bad", b"\xff\xfeok").IsOK() and dbm.GetStr("bad") == "\ufffd\ufffdok"
    assert dbm["bad"] == "\ufffd\ufffdok"
    assert "7" in dbm and 7 in dbm and "8" not in dbm
    # A str that is not UTF-8 (a lone surrogate): Set answers a status, Get raises.
    assert dbm.Set("\ud800", "x") == tkrzw.Status.INVALID_ARGUMENT_ERROR
    with pytest.raises(UnicodeEncodeError):
        dbm.Get("\ud800")


def test_set_and_remove_answers(dbm: tkrzw.DBM, tmp_path: pathlib.Path) -> None:
    first, second = dbm.Set("k", "v"), dbm.Set("k", "w")
    assert isinstance(first, tkrzw.Status) and first is not second and first.IsOK()
    duplicate = dbm.Set("k", "x", False)
    assert duplicate == tkrzw.Status.DUPLICATION_ERROR and dbm.Get("k") == b"w"
    assert dbm.Set("k", "y", overwrite=True).IsOK() and dbm.Get("k") == b"y"
    # As the reference: `overwrite` counts by its truth value.
    for falsy in (0, None, []):
        assert dbm.Set("k", "z", falsy) == tkrzw.Status.DUPLICATION_ERROR and dbm.Get("k") == b"y"
    assert dbm.Set("k", "q", 1).IsOK() and dbm.Set("k", "y", "x").IsOK() and dbm.Get("k") == b"y"
    assert dbm.Remove("k").IsOK()
    missing = dbm.Remove("k")
    assert missing == tkrzw.Status.NOT_FOUND_ERROR and missing.GetMessage() == "no record"
    dbm["d"] = "v"
    del dbm["d"]
    with pytest.raises(tkrzw.StatusException) as raised:
        del dbm["d"]
    assert raised.value.GetStatus() == tkrzw.Status.NOT_FOUND_ERROR
    with pytest.raises(tkrzw.StatusException) as raised:
        dbm["d"]
    assert raised.value.GetStatus() == tkrzw.Status.NOT_FOUND_ERROR
    dbm.Close().OrDie()
    reader = tkrzw.DBM()
    reader.Open(str(tmp_path / "casket.tkh"), False).OrDie()
    assert reader.Set("k", "v") == tkrzw.Status.PRECONDITION_ERROR
    assert reader.Remove("k") == tkrzw.Status.PRECONDITION_ERROR
    with pytest.raises(tkrzw.StatusException):
        reader["k"] = "v"
    reader.Close().OrDie()


def test_an_unopened_or_closed_database_raises_type_error(dbm: tkrzw.DBM) -> None:
    for db in [tkrzw.DBM(), dbm]:
        if db is dbm:
            dbm.Close().OrDie()
        for call in [lambda: db.Get("k"), lambda: db.GetStr("k"), lambda: db.Set("k", "v"),
                     lambda: db.Remove("k"), lambda: db["k"], lambda: "k" in db]:
            with pytest.raises(TypeError, match="not opened database"):
                call()
        with pytest.raises(TypeError):
            db["k"] = "v"
        assert db._db is None and not db.IsOpen()


def test_a_subclass_keeps_the_native_calls(tmp_path: pathlib.Path) -> None:
    class Mine(tkrzw.DBM):
        def __init__(self) -> None:
            super().__init__()
            self.extra = 1

    db = Mine()
    db.Open(str(tmp_path / "sub.tkh"), True).OrDie()
    assert db.Set("a", "b").IsOK() and db.Get("a") == b"b" and db.extra == 1 and len(db) == 1
    db.Close().OrDie()


def test_status_as_the_reference_has_it() -> None:
    status = tkrzw.Status(2, "disk")
    status.Join(status)
    assert status.GetCode() == 2 and status.GetMessage() == "disk"
    assert tkrzw.Status(7) == 7 and tkrzw.Status(7) != 8 and tkrzw.Status(7) == tkrzw.Status(7, "x")
    assert tkrzw.Status() != "SUCCESS" and not (tkrzw.Status() == None)  # noqa: E711
    assert hash(tkrzw.Status(7)) == hash(7) and tkrzw.Status(-1) == -1 and hash(tkrzw.Status(-1)) == hash(-1)
    assert tkrzw.Status.CodeName(99) == "unknown" and tkrzw.Status.CodeName(-1) == "unknown"
    assert tkrzw.Status.CodeName(tkrzw.Status.APPLICATION_ERROR) == "APPLICATION_ERROR"
    assert str(tkrzw.Status()) == "SUCCESS" and repr(tkrzw.Status(7, "x")) == "<tkrzw.Status: NOT_FOUND_ERROR: x>"
    status.Set()
    assert status.IsOK() and str(status) == "SUCCESS"
    status.Set(11, "crc")
    assert str(status) == "BROKEN_DATA_ERROR: crc"
    assert tkrzw.Status(1 << 70 > 0 and 3) == 3 and not (tkrzw.Status(3) == 1 << 70)
