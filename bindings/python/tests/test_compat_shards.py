"""kuradb.compat.tkrzw: num_shards shards as the reference's module does,
and ``with tkrzw.DBM() as dbm`` closes the database."""

from __future__ import annotations

import pathlib

import pytest

from kuradb.compat import tkrzw


def names(tmp_path: pathlib.Path):
    return sorted(p.name for p in tmp_path.iterdir())


def test_num_shards_makes_the_reference_s_shard_files(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "casket.tkh"), True, num_shards=3).IsOK()
    for i in range(30):
        dbm.Set(f"k{i}", "v").OrDie()
    assert dbm.Count() == 30
    dbm.Close().OrDie()
    assert names(tmp_path) == [f"casket.tkh-0000{i}-of-00003" for i in range(3)]
    # Reopened with num_shards=0 (the existing set, as the reference does) or
    # without it (by its files).
    for params in ({"num_shards": 0}, {}):
        dbm = tkrzw.DBM()
        assert dbm.Open(str(tmp_path / "casket.tkh"), False, **params).IsOK()
        assert dbm.Count() == 30 and dbm.GetStr("k7") == "v"
        dbm.Close().OrDie()


def test_num_shards_zero_makes_one_shard_when_none_exists(tmp_path: pathlib.Path) -> None:
    # (test_compat_tkrzw.py's parameter test passed num_shards=0 while it was
    # ignored; the shards' parameters are checked here now.)
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "one.tkt"), True, dbm="TreeDBM", num_shards=0,
                    key_comparator="RealNumberKeyComparator").IsOK()
    assert dbm.Inspect()["num_shards"] == "1" and dbm.Inspect()["shard0_key_comparator"] == "real"
    dbm.Set("a", "b").OrDie()
    dbm.Close().OrDie()
    assert names(tmp_path) == ["one.tkt-00000-of-00001"]


def test_a_different_shard_count_is_refused_not_ignored(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "casket.tkh"), True, num_shards=2).IsOK()
    dbm.Close().OrDie()
    status = dbm.Open(str(tmp_path / "casket.tkh"), True, num_shards=5)
    assert not status.IsOK() and "2" in status.GetMessage()


def test_with_closes_the_database(tmp_path: pathlib.Path) -> None:
    with tkrzw.DBM() as dbm:
        assert dbm.Open(str(tmp_path / "w.tkh"), True).IsOK()
        dbm.Set("k", "v").OrDie()
        assert dbm.IsOpen()
    assert not dbm.IsOpen()
    with tkrzw.DBM() as unopened:
        pass  # an unopened one is left as it is
    assert not unopened.IsOpen()
    with pytest.raises(RuntimeError):
        with tkrzw.DBM() as dbm:
            dbm.Open(str(tmp_path / "w.tkh"), True).OrDie()
            raise RuntimeError("the body's exception goes through")
    assert not dbm.IsOpen()
