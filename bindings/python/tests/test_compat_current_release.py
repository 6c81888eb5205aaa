"""The calls and behaviours of the reference's current Python release that
the compat module answers: File.Search, str(Index), the DBM's multi-record
and rekey calls, ProcessEach's framing calls, the Iterator protocol, and
AsyncDBM's queue, search and flat-record calls."""
import asyncio
import os
import pathlib

import pytest

from kuradb.compat import tkrzw


def _lines_file(tmp_path: pathlib.Path) -> tkrzw.File:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "k.tkt"), True).IsOK()
    for i in range(1, 101):
        dbm.Set(f"{i:08d}", str(i))
    file = tkrzw.File()
    assert file.Open(str(tmp_path / "keys.txt"), True, truncate=True).IsOK()
    assert dbm.ExportKeysAsLines(file).IsOK()
    assert file.Close().IsOK()
    dbm.Close()
    assert file.Open(str(tmp_path / "keys.txt"), False).IsOK()
    return file


def test_a_file_is_memory_mapped_by_default_as_the_references(tmp_path: pathlib.Path) -> None:
    file = tkrzw.File()
    assert file.Open(str(tmp_path / "d.txt"), True).IsOK()
    assert "class=MemoryMapParallelFile" in repr(file)
    assert file.Close().IsOK()
    assert file.Open(str(tmp_path / "s.txt"), True, file="StdFile").IsOK()
    assert "class=StdFile" in repr(file)
    assert file.Close().IsOK()


def test_file_search_finds_lines_in_each_mode(tmp_path: pathlib.Path) -> None:
    file = _lines_file(tmp_path)
    assert len(file.Search("contain", "001")) == 12
    assert len(file.Search("contain", "001", 3)) == 3
    assert file.Search("begin", "0000009") == [f"0000009{i}" for i in range(10)]
    assert len(file.Search("end", "1")) == 10
    assert len(file.Search("regex", r"^\d+1$")) == 10
    assert len(file.Search("edit", "00000100", 3)) == 3
    assert len(file.Search("editbin", b"00000100", 3)) == 3
    assert all(isinstance(line, str) for line in file.Search("contain", b"5"))
    with pytest.raises(tkrzw.StatusException) as caught:
        file.Search("foo", "1")
    assert caught.value.GetStatus().GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR
    assert file.Close().IsOK()
    with pytest.raises(tkrzw.StatusException) as caught:
        file.Search("contain", "1")
    assert caught.value.GetStatus().GetCode() == tkrzw.Status.PRECONDITION_ERROR


def test_index_prints_its_path_and_count(tmp_path: pathlib.Path) -> None:
    index = tkrzw.Index()
    assert index.GetFilePath() is None
    path = str(tmp_path / "i.tkt")
    assert index.Open(path, True, truncate=True).IsOK()
    index.Add("k", "v1")
    index.Add("k", "v2")
    assert str(index) == f"path={path} num_records=2"
    assert repr(index) == f"<tkrzw.Index: path={path} num_records=2>"
    assert index.GetFilePath() == path
    assert index.Close().IsOK()


def test_multi_record_calls_and_rekey(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "m.tkh"), True).IsOK()
    dbm.Set("a", "1")
    assert dbm.AppendMulti(":", a="2", b="3").IsOK()
    assert dbm.GetStr("a") == "1:2" and dbm.GetStr("b") == "3"
    assert dbm.CompareExchangeMulti([("a", "1:2"), ("c", None)], [("a", None), ("c", "new")]).IsOK()
    assert dbm.Get("a") is None and dbm.GetStr("c") == "new"
    status = dbm.CompareExchangeMulti([("c", "other")], [("c", "never")])
    assert status.GetCode() == tkrzw.Status.INFEASIBLE_ERROR
    assert dbm.GetStr("c") == "new"
    assert dbm.Rekey("c", "d").IsOK()
    assert dbm.Get("c") is None and dbm.GetStr("d") == "new"
    assert dbm.Rekey("d", "b", False).GetCode() == tkrzw.Status.DUPLICATION_ERROR
    assert dbm.Rekey("d", "e", True, True).IsOK()
    assert dbm.GetStr("d") == dbm.GetStr("e") == "new"
    assert dbm.Rekey("missing", "x").GetCode() == tkrzw.Status.NOT_FOUND_ERROR
    assert dbm.GetTimestamp() > 0
    dbm.Close()
    with pytest.raises(TypeError):
        tkrzw.DBM().GetTimestamp()  # as every call of an unopened DBM
    memory = tkrzw.DBM()
    assert memory.Open("", True).IsOK()
    assert memory.GetTimestamp() is None
    memory.Close()


def test_process_each_calls_before_and_after_the_records(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "p.tkt"), True).IsOK()
    for key in ("a", "b", "c"):
        dbm.Set(key, key)
    seen = []

    def each(key, value):
        seen.append(key)
        if key == b"a":
            return False
        if key == b"b":
            return 7
        return None

    assert dbm.ProcessEach(each, True).IsOK()
    assert seen == [None, b"a", b"b", b"c", None]
    assert dbm.Get("a") is None and dbm.GetStr("b") == "7" and dbm.GetStr("c") == "c"
    dbm.Close()


def test_the_iterator_follows_the_iterator_protocol(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "i.tkt"), True).IsOK()
    for key in ("a", "b", "c"):
        dbm.Set(key, key.upper())
    it = dbm.MakeIterator()
    assert it.Jump("b").IsOK()
    assert list(it) == [(b"b", b"B"), (b"c", b"C")]
    assert it.First().IsOK()
    assert next(it) == (b"a", b"A")
    assert iter(it) is it
    dbm.Close()


def test_async_dbm_queue_search_and_flat_records(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "a.tkt"), True).IsOK()
    adbm = tkrzw.AsyncDBM(dbm, 2)
    assert adbm.PushLast("first", 1.0).Get().IsOK()
    assert adbm.PushLast(b"second", 2.0).Get().IsOK()
    status, key, value = adbm.PopFirst().Get()
    assert status.IsOK() and isinstance(key, bytes) and value == b"first"
    status, key, value = adbm.PopFirstStr().Get()
    assert status.IsOK() and isinstance(key, str) and value == "second"
    status, key, value = adbm.PopFirst().Get()
    assert status.GetCode() == tkrzw.Status.NOT_FOUND_ERROR and key is None and value is None
    for i in range(10):
        dbm.Set(f"key{i}", str(i))
    status, keys = adbm.Search("begin", "key1").Get()
    assert status.IsOK() and keys == ["key1"]
    status, keys = adbm.Search("nosuchmode", "x").Get()
    assert status.GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR and keys == []
    flat = tkrzw.File()
    assert flat.Open(str(tmp_path / "flat"), True, truncate=True).IsOK()
    assert adbm.ExportToFlatRecords(flat).Get().IsOK()
    assert adbm.Clear().Get().IsOK()
    assert adbm.ImportFromFlatRecords(flat).Get().IsOK()
    assert dbm.Count() == 10
    flat.Close()

    async def popped() -> tuple:
        await adbm.PushLast("later", 3.0)
        return await adbm.PopFirstStr()

    status, _, value = asyncio.run(popped())
    assert status.IsOK() and value == "later"
    adbm.Destruct()
    dbm.Close()


def test_async_synchronize_takes_the_skip_parameters(tmp_path: pathlib.Path) -> None:
    other = tkrzw.DBM()
    assert other.Open(str(tmp_path / "b.tks"), True).IsOK()
    other.Set("only b", "1")
    assert other.Close().IsOK()
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "a.tks"), True).IsOK()
    adbm = tkrzw.AsyncDBM(dbm, 1)
    assert adbm.Synchronize(False, merge=str(tmp_path / "b.tks")).Get().IsOK()
    assert adbm.Synchronize(False, speed="fast").Get().GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR
    adbm.Destruct()
    assert dbm.GetStr("only b") == "1"
    dbm.Close()


def test_remove_multi_takes_keys_as_arguments_or_one_list(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open("", True, dbm="BabyDBM").IsOK()
    assert dbm.SetMulti(one="1", two="2", three="3", four="4").IsOK()
    assert dbm.RemoveMulti("one", "two").IsOK()
    assert dbm.RemoveMulti(["three"]).IsOK()
    assert dbm.RemoveMulti("two", "four").GetCode() == tkrzw.Status.NOT_FOUND_ERROR
    assert dbm.Count() == 0  # the keys that existed are removed all the same
    dbm.Close()


def test_compare_exchange_multi_takes_any_data_as_any_value() -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open("", True, dbm="BabyDBM").IsOK()
    dbm.Set("hop", "one")
    assert dbm.CompareExchangeMulti((("hop", tkrzw.DBM.ANY_DATA),), (("hop", "two"),)).IsOK()
    assert dbm.GetStr("hop") == "two"
    status = dbm.CompareExchangeMulti((("step", tkrzw.DBM.ANY_DATA),), (("step", "x"),))
    assert status.GetCode() == tkrzw.Status.INFEASIBLE_ERROR
    assert dbm.Get("step") is None
    dbm.Close()


def test_file_pads_to_its_block_size_and_shows_its_class(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "padded.txt")
    file = tkrzw.File()
    assert file.Open(path, True, truncate=True, file="pos-atom", block_size=512,
                     access_options="padding:pagecache").IsOK()
    assert file.Write(0, "ABCDE").IsOK()
    assert file.Append("FGH") == 5
    assert file.GetSize() == 8
    assert "PositionalAtomicFile" in repr(file) and "PositionalAtomicFile" in str(file)
    assert file.Close().IsOK()
    assert file.Open(path, False).IsOK()
    assert file.GetSize() == 512
    assert file.ReadStr(0, 8) == "ABCDEFGH"
    assert file.Close().IsOK()
    status = file.Open(path, True, file="NoSuchFile")
    assert status.GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR
    assert file.Open(path, True, block_size="big").GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR


def test_open_takes_sync_hard_and_no_create(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "casket.tkh")
    db = tkrzw.DBM()
    status = db.Open(path, True, sync_hard="sometimes")
    assert status.GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR, status
    assert "sync_hard" in status.GetMessage()
    assert db.Open(path, True, sync_hard=True, num_buckets=10) == tkrzw.Status.SUCCESS
    db.Set("k", "v").OrDie()
    assert db.Close() == tkrzw.Status.SUCCESS
    assert db.Open(path, False, sync_hard="true") == tkrzw.Status.SUCCESS
    assert db.GetStr("k") == "v"
    db.Close().OrDie()
    missing = str(tmp_path / "missing.tkh")
    assert db.Open(missing, True, no_create=True).GetCode() == tkrzw.Status.NOT_FOUND_ERROR
    assert not os.path.exists(missing)
