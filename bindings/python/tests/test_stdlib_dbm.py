"""kuradb.dbm: the standard library's dbm interface, also through shelve."""

from __future__ import annotations

import os
import pathlib
import shelve
import stat

import pytest

import kuradb.dbm


def test_flags(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "db"
    with pytest.raises(kuradb.dbm.error):
        kuradb.dbm.open(path)  # r: must exist
    with pytest.raises(kuradb.dbm.error):
        kuradb.dbm.open(path, "w")
    with kuradb.dbm.open(path, "c", 0o640) as db:
        db["a"] = "1"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640 & ~_umask()
    with kuradb.dbm.open(path, "w") as db:
        assert db["a"] == b"1"
        db[b"b"] = b"2"
    with kuradb.dbm.open(str(path)) as db:
        assert sorted(db.keys()) == [b"a", b"b"]
        with pytest.raises(kuradb.dbm.error):
            db["c"] = "3"
        with pytest.raises(kuradb.dbm.error):
            del db["a"]
    with kuradb.dbm.open(path, "n") as db:
        assert len(db) == 0
    with kuradb.dbm.open(path, "cfu") as db:
        db["x"] = "y"
    with kuradb.dbm.open(path, "ws") as db:
        db["y"] = "z"  # on the device when this returns
    with pytest.raises(ValueError):
        kuradb.dbm.open(path, "x")
    with pytest.raises(ValueError):
        kuradb.dbm.open(path, "rq")
    assert issubclass(kuradb.dbm.error, OSError)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_gnu_interface(tmp_path: pathlib.Path) -> None:
    db = kuradb.dbm.open(tmp_path / "g.kt", "c")
    for key in ["b", "a", "c"]:
        db[key] = key.upper()
    assert "a" in db and b"b" in db and "z" not in db and len(db) == 3
    with pytest.raises(TypeError):
        12 in db  # noqa: B015
    with pytest.raises(KeyError):
        db["z"]
    with pytest.raises(KeyError):
        del db["z"]
    assert db.get("a") == b"A" and db.get("z") is None and db.get("z", b"d") == b"d"
    assert db.setdefault("d", b"D") == b"D" and db.setdefault("d", b"E") == b"D"
    keys = []
    key = db.firstkey()
    while key is not None:
        keys.append(key)
        key = db.nextkey(key)
    assert keys == [b"a", b"b", b"c", b"d"] == db.keys() == list(db)
    assert db.nextkey(b"zzz") is None
    db.reorganize()
    db.sync()
    db.close()
    db.close()
    with pytest.raises(kuradb.dbm.error):
        db["a"]


def test_hash_by_default(tmp_path: pathlib.Path) -> None:
    with kuradb.dbm.open(tmp_path / "plain", "c") as db:
        db["k"] = "v"
        assert db._open.dbm_class() == "hash"
        assert db.firstkey() == b"k" and db.nextkey(b"k") is None


def test_shelve(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "shelf.kh"
    with shelve.Shelf(kuradb.dbm.open(path, "c")) as shelf:
        shelf["fruits"] = ["apple", "pear"]
        shelf["count"] = {"n": 3}
        assert "fruits" in shelf and len(shelf) == 2
    with shelve.Shelf(kuradb.dbm.open(path, "w"), writeback=True) as shelf:
        assert shelf["fruits"] == ["apple", "pear"]
        shelf["fruits"].append("fig")
        del shelf["count"]
        assert sorted(shelf.keys()) == ["fruits"]
    with shelve.Shelf(kuradb.dbm.open(path, "r")) as shelf:
        assert dict(shelf) == {"fruits": ["apple", "pear", "fig"]}


def test_a_new_database_starts_small_and_grows_with_its_records(tmp_path):
    import shelve

    path = str(tmp_path / "shelf.kh")
    with shelve.Shelf(kuradb.dbm.open(path, "c")) as shelf:
        shelf["fruits"] = ["apple", "pear"]
        shelf["count"] = 2
    assert os.path.getsize(path) < 64 * 1024, os.path.getsize(path)
    plain = str(tmp_path / "plain")
    with kuradb.dbm.open(plain, "c") as db:
        for i in range(20000):
            db[f"key{i}"] = "value"
        buckets = int(db._open.inspect()["num_buckets"])
    # Grown with its records (checked every 256 writes), so chains stay short.
    assert buckets > 8 * 1021 and 20000 <= buckets + 256, buckets
    with kuradb.dbm.open(plain, "r") as db:
        assert len(db) == 20000 and db["key19999"] == b"value"
