"""kuradb.DBM: every method, the dict protocol, cursors, ranges and errors."""

from __future__ import annotations

import pathlib
import threading

import pytest

import kuradb


@pytest.fixture(params=["hash", "tree"])
def db(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> kuradb.DBM:
    ext = {"hash": "kh", "tree": "kt"}[request.param]
    database = kuradb.DBM(tmp_path / f"casket.{ext}", True, truncate=True)
    yield database
    database.close()


def test_get_set_remove_with_bytes_and_str(db: kuradb.DBM) -> None:
    db.set("japan", "tokyo")
    db.set(b"\xff\x00", bytearray(b"raw"))
    db.set("日本", memoryview(b"nihon"))
    assert db.get("japan") == b"tokyo" and db.get(b"japan") == b"tokyo"
    assert db.get_str("japan") == "tokyo"
    assert db.get(b"\xff\x00") == b"raw" and db.get("日本".encode()) == b"nihon"
    assert db.get("missing") is None and db.get("missing", 5) == 5 and db.get_str("missing", "d") == "d"
    with pytest.raises(kuradb.DuplicationError):
        db.set("japan", "kyoto", overwrite=False)
    assert db.remove("japan") is True and db.remove("japan") is False
    with pytest.raises(TypeError, match="key must be bytes or str"):
        db.get(12)


def test_append_compare_exchange_increment(db: kuradb.DBM) -> None:
    db.append("k", "a")
    db.append("k", "b", ":")
    assert db["k"] == b"a:b"
    assert db.compare_exchange("k", "a:b", "c") and not db.compare_exchange("k", "a:b", "d")
    assert db.compare_exchange("new", None, "x") and db["new"] == b"x"
    assert db.compare_exchange("new", "x", None) and "new" not in db
    assert db.increment("n") == 1 and db.increment("n", 10) == 11 and db.increment("n", None) == 11
    assert db.increment("m", 0, 100) == 100 and db["n"] == (11).to_bytes(8, "big")
    with pytest.raises(kuradb.InvalidArgumentError):
        db.increment("k", 1)


def test_multi(db: kuradb.DBM) -> None:
    db.set_multi({"a": "1", "b": "2"}, c="3")
    db.set_multi([("d", "4")])
    assert db.get_multi(["a", b"c", "z"]) == {"a": b"1", b"c": b"3"}
    with pytest.raises(kuradb.DuplicationError):
        db.set_multi({"a": "9", "e": "5"}, overwrite=False)
    assert db["a"] == b"1" and "e" not in db
    assert db.remove_multi(["a", "b", "zz"]) == 2 and len(db) == 2


def test_process(db: kuradb.DBM) -> None:
    seen: list[bytes | None] = []

    def record(value: bytes | None) -> None:
        seen.append(value)

    db.process("k", record)
    db.process("k", lambda v: "first" if v is None else None)
    db.process("k", lambda v: v + b"!")
    db.process("k", record, writable=False)
    assert seen == [None, b"first!"]
    db.process("k", lambda v: False)
    assert "k" not in db
    with pytest.raises(ZeroDivisionError):
        db.process("k", lambda v: 1 / 0)
    with pytest.raises(TypeError):
        db.process("k", lambda v: 12)
    assert "k" not in db
    db.update(a="1", b="2")
    db.process_each(lambda k, v: v + b"0" if k == b"a" else False)
    assert dict(db.items()) == {b"a": b"10"}
    with pytest.raises(kuradb.InfeasibleError, match="inside one of its callbacks"):
        db.process("a", lambda v: db.close())


def test_dict_protocol(db: kuradb.DBM) -> None:
    db["a"] = "1"
    db[b"b"] = b"2"
    assert db["a"] == b"1" and "a" in db and b"b" in db and "c" not in db
    assert len(db) == 2 and bool(db)
    with pytest.raises(KeyError):
        db["c"]
    with pytest.raises(KeyError):
        del db["c"]
    del db["b"]
    assert sorted(db) == [b"a"] and list(db.keys()) == [b"a"] and list(db.values()) == [b"1"]
    assert list(db.items()) == [(b"a", b"1")]
    assert db.setdefault("a", "x") == b"1" and db.setdefault("s", "x") == b"x" and db["s"] == b"x"
    assert db.pop("s") == b"x" and db.pop("s", None) is None and db.pop("s", 7) == 7
    with pytest.raises(KeyError):
        db.pop("s")
    db.update({"u": "1"}, v="2")
    db.update([("w", "3")])
    assert {k: v for k, v in db.items()} == {b"a": b"1", b"u": b"1", b"v": b"2", b"w": b"3"}
    db.clear()
    assert len(db) == 0 and not db


def test_housekeeping(db: kuradb.DBM, tmp_path: pathlib.Path) -> None:
    for i in range(100):
        db[f"{i:04d}"] = "x" * i
    assert db.count() == 100 and db.file_size() > 0
    assert str(db.path()).startswith(str(tmp_path))
    info = db.inspect()
    assert info["dbm"] == db.dbm_class() and info["num_records"] == "100"
    assert isinstance(db.should_be_rebuilt(), bool) and db.is_healthy()
    db.rebuild()
    db.synchronize()
    db.synchronize(hard=True)
    db.copy_file_data(tmp_path / "copy.data")
    copy = kuradb.DBM(tmp_path / "copy.data")
    assert len(copy) == 100 and copy["0050"] == b"x" * 50
    copy.close()
    other = kuradb.DBM(tmp_path / "other.kh", True)
    db.export(other)
    assert len(other) == 100
    other.close()
    with pytest.raises(ValueError):
        db.export(db)
    assert kuradb.DBM.restore(db.path(), tmp_path / "restored.data") >= 0


def test_iterators(db: kuradb.DBM) -> None:
    for i in range(10):
        db[str(i)] = str(i * i)
    it = db.make_iterator()
    it.first()
    seen = {}
    while (record := it.get()) is not None:
        assert it.get_key() == record[0] and it.get_value() == record[1]
        seen[record[0]] = record[1]
        it.next()
    assert seen == {str(i).encode(): str(i * i).encode() for i in range(10)}
    it.jump("3")
    assert it.get() == (b"3", b"9")
    it.set("nine")
    assert db["3"] == b"nine"
    it.remove()
    assert "3" not in db
    it.first()
    assert len(list(it)) == 9
    if db.is_ordered():
        it.last()
        assert it.get_key() == b"9"
        it.previous()
        assert it.get_key() == b"8"
        it.jump_lower("5")
        assert it.get_key() == b"4"
        it.jump_lower("5", inclusive=True)
        assert it.get_key() == b"5"
        it.jump_upper("5")
        assert it.get_key() == b"6"
        assert [k for k, _ in db.range("2", "6")] == [b"2", b"4", b"5"]
        assert [k for k, _ in db.range(None, "2")] == [b"0", b"1"]
        assert [k for k, _ in db.range("8")] == [b"8", b"9"]
    else:
        with pytest.raises(kuradb.UnsupportedError):
            it.last()
        with pytest.raises(kuradb.UnsupportedError):
            db.range("1", "2")
        with pytest.raises(kuradb.NotFoundError):
            it.jump("missing")


def test_range_follows_the_key_comparator(tmp_path: pathlib.Path) -> None:
    with kuradb.DBM(tmp_path / "n.kt", True, key_comparator="decimal", max_cached_pages=100) as db:
        for i in range(20):
            db[str(i)] = ""
        assert [k for k, _ in db.range("5", "12")] == [str(i).encode() for i in range(5, 12)]


def test_skip_database(tmp_path: pathlib.Path) -> None:
    with kuradb.DBM(tmp_path / "s.ks", True, reducer="last", step_unit=2) as db:
        db["a"] = "1"
        db["a"] = "2"
        db.synchronize()
        assert db["a"] == b"2" and len(db) == 1 and db.is_ordered()
    with kuradb.DBM(tmp_path / "s.ks") as db:
        assert dict(db.items()) == {b"a": b"2"}


@pytest.mark.parametrize("ext", ["kh", "kt"])
def test_record_checksums(tmp_path: pathlib.Path, ext: str) -> None:
    """record_crc_mode is kept in the file (a reopen giving another keeps it),
    shown by inspect, changed by a rebuild; with it, a flipped byte in a
    stored value raises BrokenDataError naming the file and the offset, and a
    restore skips that record."""
    path = tmp_path / f"crc.{ext}"
    tuning = {"max_page_size": 200} if ext == "kt" else {}
    with kuradb.DBM(path, True, record_crc_mode="16", **tuning) as db:
        for i in range(60):
            db[f"k{i:04}"] = f"<value {i:04}>"
        assert db.inspect()["record_crc_mode"] == "crc-16"
        db.rebuild(record_crc_mode="RECORD_CRC_32")
        assert db.inspect()["record_crc_mode"] == "crc-32"
    with kuradb.DBM(path, False, record_crc_mode="none") as db:
        assert db.inspect()["record_crc_mode"] == "crc-32"
    data = bytearray(path.read_bytes())
    at = data.find(b"<value 0042>")
    assert at >= 0
    data[at + 5] ^= 1
    path.write_bytes(bytes(data))
    with kuradb.DBM(path, False) as db:
        with pytest.raises(kuradb.BrokenDataError, match="offset") as raised:
            db.get("k0042")
        assert str(path) in str(raised.value) and "checksum" in str(raised.value)
        assert db.get("k0001") == b"<value 0001>"
    restored = tmp_path / f"restored.{ext}"
    kept = kuradb.DBM.restore(path, restored)
    assert 40 < kept < 60
    with kuradb.DBM(restored, False) as db:
        assert db.get("k0042") is None and len(db) == kept
        assert db.inspect()["record_crc_mode"] == "crc-32"


def test_open_parameters_and_errors(tmp_path: pathlib.Path) -> None:
    db = kuradb.DBM()
    assert not db.is_open() and repr(db) == "<kuradb.DBM (closed)>"
    with pytest.raises(kuradb.InfeasibleError, match="not open"):
        db.get("a")
    db.open(tmp_path / "p.data", True, dbm="hash", file="pos-para", num_buckets=1000, align_pow=4,
            cache_buckets=True, update_mode="appending", record_crc_mode="32", no_wait=True)
    assert db.inspect()["num_buckets"] == "1000"
    with pytest.raises(kuradb.InfeasibleError, match="already open"):
        db.open(tmp_path / "q.data", True)
    db.close()
    db.close()  # closing twice does nothing
    with pytest.raises(kuradb.InvalidArgumentError, match="unknown parameter max_level"):
        kuradb.DBM(tmp_path / "x.kh", True, max_level=3)
    with pytest.raises(kuradb.InvalidArgumentError, match="num_buckets must be a number"):
        kuradb.DBM(tmp_path / "x.kh", True, num_buckets="many")
    with pytest.raises(TypeError, match="parameter num_buckets"):
        kuradb.DBM(tmp_path / "x.kh", True, num_buckets=None)
    with pytest.raises(kuradb.InvalidArgumentError, match="give dbm="):
        kuradb.DBM(tmp_path / "noext", True)
    with pytest.raises(kuradb.NotFoundError):
        kuradb.DBM(tmp_path / "missing.kh", False)
    with kuradb.DBM(tmp_path / "r.kh", True) as w:
        w["k"] = "v"
    with kuradb.DBM(tmp_path / "r.kh") as r:
        with pytest.raises(kuradb.InfeasibleError, match="reading only"):
            r["k"] = "w"
    assert issubclass(kuradb.NotFoundError, kuradb.Error) and issubclass(kuradb.Error, Exception)


def test_closing_stops_iterators(tmp_path: pathlib.Path) -> None:
    db = kuradb.DBM(tmp_path / "c.kt", True)
    db["a"] = "1"
    it = db.make_iterator()
    keys = iter(db)
    db.close()
    with pytest.raises(kuradb.InfeasibleError):
        it.first()
    with pytest.raises(kuradb.InfeasibleError):
        next(keys)
    # The file is closed and unlocked: it opens again.
    with kuradb.DBM(tmp_path / "c.kt", True) as again:
        assert again["a"] == b"1"


def test_threads_share_a_database(db: kuradb.DBM) -> None:
    def work(t: int) -> None:
        for i in range(2000):
            db[f"{t}-{i}"] = str(i)
            db.increment("counter")
            db.process("total", lambda v: str(int(v or b"0") + 1))
            assert db[f"{t}-{i}"] == str(i).encode()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert db.increment("counter", None) == 8000 and db["total"] == b"8000" and len(db) == 8002


def test_the_gil_is_released(tmp_path: pathlib.Path) -> None:
    """While one thread waits for a database's lock inside kuradb, another
    runs Python: the waiting thread does not hold the GIL."""
    with kuradb.DBM(tmp_path / "g.kh", True) as db:
        entered, release = threading.Event(), threading.Event()
        ticks = []

        def hold(value: bytes | None) -> None:
            entered.set()
            release.wait(10)

        holder = threading.Thread(target=lambda: db.process("k", hold))
        holder.start()
        entered.wait(10)
        waiter = threading.Thread(target=lambda: db.set("k", "v"))
        waiter.start()  # blocks on the record's lock inside kuradb
        for _ in range(100):
            ticks.append(1)
        release.set()
        holder.join()
        waiter.join()
        assert len(ticks) == 100 and db["k"] == b"v"


@pytest.mark.parametrize("ext", ["kh", "kt"])
@pytest.mark.parametrize("mode", ["zstd", "lz4", "zlib", "lzma"])
def test_record_compression(tmp_path: pathlib.Path, ext: str, mode: str) -> None:
    """record_comp_mode compresses values (a tree's pages), is kept in the file
    (a reopen naming none keeps it), shown by inspect and changed by a
    rebuild; an unknown mode is refused."""
    path = tmp_path / f"comp.{ext}"
    value = '{"name": "kuradb", "kind": "dbm", "tags": ["a", "b"]} ' * 20
    plain = tmp_path / f"plain.{ext}"
    for p, m in [(path, mode), (plain, "none")]:
        with kuradb.DBM(p, True, record_comp_mode=m, num_buckets=1000) as db:
            for i in range(200):
                db[f"k{i:04}"] = value + str(i)
            assert db.inspect()["record_comp_mode"] == m
    assert path.stat().st_size < plain.stat().st_size
    with kuradb.DBM(path, True, record_comp_mode="none") as db:
        assert db.inspect()["record_comp_mode"] == mode
        assert db.get("k0042") == (value + "42").encode()
        db.rebuild(record_comp_mode="RECORD_COMP_NONE")
        assert db.inspect()["record_comp_mode"] == "none"
        assert db.get("k0199") == (value + "199").encode()
    with pytest.raises(kuradb.Error, match="is not a mode"):
        kuradb.DBM(tmp_path / f"brotli.{ext}", True, record_comp_mode="brotli")
