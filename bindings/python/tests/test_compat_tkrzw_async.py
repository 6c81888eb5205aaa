"""kuradb.compat.tkrzw.AsyncDBM: the reference's names and Status results,
through Future.Get(), Future.Wait() and await."""

from __future__ import annotations

import asyncio
import pathlib

from kuradb.compat import tkrzw


def opened(tmp_path: pathlib.Path) -> tkrzw.DBM:
    dbm = tkrzw.DBM()
    dbm.Open(str(tmp_path / "casket.tkh"), True, truncate=True).OrDie()
    return dbm


def test_statuses_through_get(tmp_path: pathlib.Path) -> None:
    dbm = opened(tmp_path)
    adbm = tkrzw.AsyncDBM(dbm, 2)
    assert adbm.Set("a", "1").Get() == tkrzw.Status.SUCCESS
    assert adbm.Set("a", "2", False).Get() == tkrzw.Status.DUPLICATION_ERROR
    status, value = adbm.Get("a").Get()
    assert status.IsOK() and value == b"1"
    assert adbm.Get("zz").Get() == (tkrzw.Status(tkrzw.Status.NOT_FOUND_ERROR), None)
    assert adbm.GetStr("a").Get()[1] == "1"
    assert adbm.SetMulti(b="2", c="3").Get().IsOK()
    status, found = adbm.GetMulti("a", "b", "zz").Get()
    assert status == tkrzw.Status.NOT_FOUND_ERROR and found == {b"a": b"1", b"b": b"2"}
    assert adbm.GetMultiStr("a", "b").Get() == (tkrzw.Status(), {"a": "1", "b": "2"})
    assert adbm.Append("a", "x", ":").Get().IsOK() and dbm.GetStr("a") == "1:x"
    assert adbm.AppendMulti("/", a="y", n="z").Get().IsOK() and dbm.GetStr("a") == "1:x/y"
    assert adbm.CompareExchange("a", "1:x/y", "2").Get().IsOK()
    assert adbm.CompareExchange("a", "nope", "3").Get() == tkrzw.Status.INFEASIBLE_ERROR
    assert adbm.Increment("cnt", 5, 10).Get() == (tkrzw.Status(), 15)
    assert adbm.Increment("cnt", -(2**63)).Get() == (tkrzw.Status(), 15)
    # As the reference: a value not 8 bytes long counts from its big-endian bytes.
    assert adbm.Set("short", b"\x01\x00").Get().IsOK()
    assert adbm.Increment("short", -(2**63)).Get() == (tkrzw.Status(), 256)
    assert adbm.Increment("short", 1).Get() == (tkrzw.Status(), 257)
    assert dbm.Get("short") == (257).to_bytes(8, "big") and adbm.Remove("short").Get().IsOK()
    assert adbm.CompareExchangeMulti([("a", "2")], [("a", None), ("e", "5")]).Get().IsOK()
    assert adbm.CompareExchangeMulti([("a", "2")], [("e", "6")]).Get() == tkrzw.Status.INFEASIBLE_ERROR
    assert adbm.Remove("e").Get().IsOK() and adbm.Remove("e").Get() == tkrzw.Status.NOT_FOUND_ERROR
    assert adbm.Rekey("missing", "x").Get() == tkrzw.Status.NOT_FOUND_ERROR
    future = adbm.Synchronize(False)
    assert future.Wait(30) and future.Get().IsOK()
    assert adbm.Rebuild().Get().IsOK() and adbm.Rebuild(bogus=1).Get() == tkrzw.Status.INVALID_ARGUMENT_ERROR
    assert adbm.CopyFileData(str(tmp_path / "copy.tkh")).Get().IsOK()
    other = tkrzw.DBM()
    other.Open(str(tmp_path / "other.tkh"), True).OrDie()
    assert adbm.Export(other).Get().IsOK() and other.Count() == dbm.Count()
    other.Close().OrDie()
    assert adbm.Clear().Get().IsOK() and dbm.Count() == 0
    assert dbm.Close() == tkrzw.Status.INFEASIBLE_ERROR  # the AsyncDBM still uses it
    adbm.Destruct()
    assert adbm.Get("a").Get()[0] == tkrzw.Status.INFEASIBLE_ERROR
    assert dbm.Close().IsOK()


def test_await_answers_what_get_answers(tmp_path: pathlib.Path) -> None:
    dbm = opened(tmp_path)
    adbm = tkrzw.AsyncDBM(dbm, 4)

    async def main() -> None:
        statuses = await asyncio.gather(*(adbm.Set(f"k{i}", f"v{i}") for i in range(200)))
        assert all(s.IsOK() for s in statuses)
        assert await adbm.Get("k7") == (tkrzw.Status(), b"v7")
        assert (await adbm.Set("k7", "x", False)) == tkrzw.Status.DUPLICATION_ERROR
        future = adbm.Get("k8")
        await future
        assert future.Get() == (tkrzw.Status(), b"v8")

    asyncio.run(main())
    adbm.Destruct()
    assert dbm.Count() == 200
    dbm.Close().OrDie()


def test_set_multi_without_overwrite_sets_the_absent_records(tmp_path: pathlib.Path) -> None:
    """As the reference's: the records that exist stay, the others are set,
    and the status is DUPLICATION_ERROR if any stayed."""
    dbm = opened(tmp_path)
    adbm = tkrzw.AsyncDBM(dbm, 2)
    assert adbm.SetMulti(False, a="1", b="2").Get().IsOK()
    assert adbm.SetMulti(False, b="20", c="30").Get() == tkrzw.Status.DUPLICATION_ERROR
    assert (dbm.GetStr("a"), dbm.GetStr("b"), dbm.GetStr("c")) == ("1", "2", "30")
    assert adbm.SetMulti(True, b="20", d="40").Get().IsOK()
    assert (dbm.GetStr("b"), dbm.GetStr("d")) == ("20", "40")
    adbm.Destruct()
    assert dbm.Close().IsOK()
