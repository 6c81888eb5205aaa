"""kuradb.DBM as a collections.abc.MutableMapping: views, popitem,
setdefault, and the ordered walks range, prefix and reversed."""

from __future__ import annotations

import collections.abc
import pathlib

import pytest

import kuradb


@pytest.fixture(params=["hash", "tree", "skip"])
def db(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> kuradb.DBM:
    ext = {"hash": "kh", "tree": "kt", "skip": "ks"}[request.param]
    database = kuradb.DBM(tmp_path / f"casket.{ext}", True, truncate=True)
    yield database
    database.close()


@pytest.fixture
def tree(tmp_path: pathlib.Path) -> kuradb.DBM:
    database = kuradb.DBM(tmp_path / "casket.kt", True, truncate=True)
    database.update({k: k.upper() for k in ["apple", "apricot", "banana", "blueberry", "cherry"]})
    yield database
    database.close()


def synced(db: kuradb.DBM) -> None:
    # A skip database shows its updates after a synchronization.
    db.synchronize()


def test_it_is_a_mutable_mapping(db: kuradb.DBM) -> None:
    assert isinstance(db, collections.abc.MutableMapping)
    assert isinstance(db, collections.abc.Mapping)
    assert issubclass(kuradb.DBM, collections.abc.MutableMapping)
    # A mapping's generic code works on it: the mixins fill in from the protocol.
    db.update({"a": "1", "b": "2"})
    synced(db)
    assert dict(db) == {b"a": b"1", b"b": b"2"}
    assert dict(db.items()) == {b"a": b"1", b"b": b"2"}
    # A database is a handle: it compares and hashes by identity.
    assert db == db and hash(db) == hash(db)
    assert len({db}) == 1


def test_views_have_len_and_in(db: kuradb.DBM) -> None:
    keys, values, items = db.keys(), db.values(), db.items()
    assert len(keys) == len(values) == len(items) == 0
    db.update({"a": "1", "b": "2", "c": "3"})
    synced(db)
    # Views are live, as a dict's are.
    assert len(keys) == len(values) == len(items) == 3
    assert isinstance(keys, collections.abc.KeysView)
    assert isinstance(values, collections.abc.ValuesView)
    assert isinstance(items, collections.abc.ItemsView)
    assert b"a" in keys and "b" in keys and b"z" not in keys
    assert b"2" in values and b"9" not in values
    assert (b"a", b"1") in items and ("c", "3") in items
    assert (b"a", b"2") not in items and (b"z", b"1") not in items and "a" not in items
    assert sorted(keys) == [b"a", b"b", b"c"] and sorted(values) == [b"1", b"2", b"3"]
    assert sorted(items) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert keys & {b"a", b"x"} == {b"a"}
    # Each iteration starts anew.
    assert len(list(keys)) == len(list(keys)) == 3


def test_popitem_and_setdefault(db: kuradb.DBM) -> None:
    with pytest.raises(KeyError):
        db.popitem()
    assert db.setdefault("k", "first") == b"first"
    synced(db)
    assert db.setdefault("k", "second") == b"first"
    db["j"] = "other"
    synced(db)
    popped = [db.popitem()]
    synced(db)
    popped.append(db.popitem())
    assert sorted(popped) == [(b"j", b"other"), (b"k", b"first")]
    synced(db)
    assert len(db) == 0
    with pytest.raises(KeyError):
        db.popitem()


def test_popitem_takes_the_first_key_of_an_ordered_database(tree: kuradb.DBM) -> None:
    assert tree.popitem() == (b"apple", b"APPLE")
    assert b"apple" not in tree and len(tree) == 4


def test_range_bounds_direction_and_inclusion(tree: kuradb.DBM) -> None:
    def keys(records):
        return [k for k, _ in records]

    assert keys(tree.range("apricot", "blueberry")) == [b"apricot", b"banana"]
    assert keys(tree.range("apricot", "blueberry", inclusive=True)) == [b"apricot", b"banana", b"blueberry"]
    assert keys(tree.range("apricot", "blueberry", reverse=True)) == [b"banana", b"apricot"]
    assert keys(tree.range("apricot", "blueberry", reverse=True, inclusive=True)) == [
        b"blueberry", b"banana", b"apricot"]
    assert keys(tree.range("b")) == [b"banana", b"blueberry", b"cherry"]
    assert keys(tree.range(None, "b", reverse=True)) == [b"apricot", b"apple"]
    assert keys(tree.range(reverse=True)) == [b"cherry", b"blueberry", b"banana", b"apricot", b"apple"]
    assert keys(tree.range("x", "y")) == [] and keys(tree.range("x", reverse=True)) == []
    assert list(tree.range("banana", "banana", inclusive=True)) == [(b"banana", b"BANANA")]


def test_range_follows_the_key_comparator(tmp_path: pathlib.Path) -> None:
    with kuradb.DBM(tmp_path / "n.kt", True, key_comparator="decimal") as db:
        db.update({str(i): str(i) for i in range(1, 21)})
        assert [k for k, _ in db.range("8", "12")] == [b"8", b"9", b"10", b"11"]
        assert [k for k, _ in db.range("8", "12", reverse=True, inclusive=True)] == [
            b"12", b"11", b"10", b"9", b"8"]
        with pytest.raises(kuradb.UnsupportedError, match="decimal"):
            db.prefix("1")


def test_prefix(tree: kuradb.DBM) -> None:
    assert list(tree.prefix("ap")) == [(b"apple", b"APPLE"), (b"apricot", b"APRICOT")]
    assert [k for k, _ in tree.prefix(b"b")] == [b"banana", b"blueberry"]
    assert list(tree.prefix("zz")) == [] and len(list(tree.prefix(""))) == 5


def test_reversed(tree: kuradb.DBM) -> None:
    assert list(reversed(tree)) == [b"cherry", b"blueberry", b"banana", b"apricot", b"apple"]


def test_skip_database_walks_in_order(tmp_path: pathlib.Path) -> None:
    with kuradb.DBM(tmp_path / "s.ks", True) as db:
        db.update({"a": "1", "b": "2", "c": "3"})
        db.synchronize()
        assert list(reversed(db)) == [b"c", b"b", b"a"]
        assert [k for k, _ in db.range("a", "c", reverse=True)] == [b"b", b"a"]
        assert list(db.prefix("b")) == [(b"b", b"2")]


def test_ordered_walks_refuse_a_hash_database(tmp_path: pathlib.Path) -> None:
    with kuradb.DBM(tmp_path / "h.kh", True) as db:
        db["a"] = "1"
        for walk in (lambda: db.range("a", "b"), lambda: db.prefix("a"), lambda: reversed(db)):
            with pytest.raises(kuradb.UnsupportedError, match="needs an ordered database"):
                walk()
