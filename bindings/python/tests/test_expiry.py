"""Expiry (time to live): a database opened with expiry=True."""

from __future__ import annotations

import math
import pathlib
import time

import pytest

import kuradb


@pytest.fixture(params=["hash", "tree"])
def db(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> kuradb.DBM:
    ext = {"hash": "kh", "tree": "kt"}[request.param]
    database = kuradb.DBM(tmp_path / f"sessions.{ext}", True, expiry=True)
    yield database
    database.close()


def test_set_with_a_ttl_reads_back_and_expires(db: kuradb.DBM) -> None:
    assert db.has_expiry()
    db.set("session", "alice", ttl=0.2)
    db.set("config", "kept")
    left = db.ttl("session")
    assert left is not None and 0 < left <= 0.2
    assert db.ttl("config") is None
    assert db.expiry("config") is None
    at = db.expiry("session")
    assert at is not None and abs(at - (time.time() + 0.2)) < 5
    assert db.get("session") == b"alice" and len(db) == 2
    time.sleep(0.3)
    assert db.get("session") is None and "session" not in db and len(db) == 1
    assert list(db.keys()) == [b"config"]
    with pytest.raises(KeyError):
        db.ttl("session")
    with pytest.raises(KeyError):
        db.ttl("never-there")


def test_expire_persist_and_a_plain_set(db: kuradb.DBM) -> None:
    db.set("k", "v")
    assert db.expire("k", 100)
    assert 99 < db.ttl("k") <= 100
    assert db.persist("k") and db.ttl("k") is None
    assert not db.persist("k")
    assert not db.expire("absent", 10) and not db.persist("absent")
    assert db.expire_at("k", time.time() + 50)
    assert 40 < db.ttl("k") <= 50.01
    db.set("k", "w")  # a plain set takes the expiry away, as Redis's SET does
    assert db.ttl("k") is None
    db.set("k", "x", ttl=60)
    db.append("k", "y")  # a change of the value keeps it
    assert db.get("k") == b"xy" and db.ttl("k") > 50
    assert db.expire("k", 0) and db.get("k") is None
    assert db.expire_at("absent", 1.0) is False


def test_insert_with_a_ttl(db: kuradb.DBM) -> None:
    db.set("k", "v", overwrite=False, ttl=30)
    with pytest.raises(kuradb.DuplicationError):
        db.set("k", "w", overwrite=False, ttl=30)
    assert db.get("k") == b"v" and db.ttl("k") > 20


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, 1e300])
def test_bad_times_are_refused_by_name(db: kuradb.DBM, bad: float) -> None:
    db.set("k", "v")
    with pytest.raises(kuradb.InvalidArgumentError, match="time to live"):
        db.set("k", "v", ttl=bad)
    with pytest.raises(kuradb.InvalidArgumentError, match="time to live"):
        db.expire("k", bad)
    with pytest.raises(kuradb.InvalidArgumentError, match="expiry time"):
        db.expire_at("k", bad)
    assert db.get("k") == b"v" and db.ttl("k") is None


def test_sweep_and_the_background_sweeper(db: kuradb.DBM) -> None:
    for i in range(50):
        db.set(f"gone{i}", "x", ttl=0.05)
    db.set("stays", "y")
    time.sleep(0.1)
    removed = 0
    while True:
        visited, n, finished = db.sweep(10)
        assert visited <= 10
        removed += n
        if finished:
            break
    assert removed == 50 and len(db) == 1
    with pytest.raises(kuradb.InvalidArgumentError):
        db.sweep(0)
    for i in range(20):
        db.set(f"later{i}", "x", ttl=0.05)
    db.start_sweeper(100_000)
    with pytest.raises(kuradb.InfeasibleError, match="runs already"):
        db.start_sweeper(10)
    deadline = time.time() + 5
    swept = 0
    while time.time() < deadline:
        time.sleep(0.1)
        visited, n, finished = db.sweep(1000)
        # Nothing left for a sweep of our own once the thread has done it.
        if n == 0 and finished and db.stop_sweeper() is not None:
            swept = 1
            break
    assert swept and db.stop_sweeper() is None
    db.start_sweeper(10)  # close stops it


def test_expiry_survives_a_reopen(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "kept.kt"
    with kuradb.DBM(path, True, expiry=True) as db:
        db.set("k", "v", ttl=1000)
        db.set("p", "q")
    with kuradb.DBM(path, True) as db:  # a database with expiry opens with it
        assert db.has_expiry() and db.ttl("k") > 900 and db.ttl("p") is None
    with pytest.raises(kuradb.InfeasibleError, match="expiry=false"):
        kuradb.DBM(path, True, expiry=False)


def test_a_database_without_expiry_says_so(tmp_path: pathlib.Path) -> None:
    with kuradb.DBM(tmp_path / "plain.kh", True) as db:
        db.set("k", "v")
        assert not db.has_expiry()
        with pytest.raises(kuradb.InfeasibleError, match="expiry=true"):
            db.set("k", "v", ttl=5)
        with pytest.raises(kuradb.InfeasibleError, match="expiry=true"):
            db.ttl("k")
        with pytest.raises(kuradb.InfeasibleError, match="expiry=true"):
            db.start_sweeper(100)
        assert db.get("k") == b"v"
    with pytest.raises(kuradb.Error, match="expiry"):
        kuradb.DBM(tmp_path / "plain.kh", True, expiry=True)


def test_async_set_expire_persist(db: kuradb.DBM) -> None:
    with kuradb.AsyncDBM(db, 2) as adb:
        adb.set("a", "1", ttl=100).get()
        adb.set("b", "2").get()
        assert adb.expire("b", 50).get() is True
        assert adb.persist("a").get() is True
        assert adb.persist("missing").get() is False
        with pytest.raises(kuradb.InvalidArgumentError):
            adb.set("c", "3", ttl=-1)
    assert db.ttl("a") is None and 40 < db.ttl("b") <= 50


def test_an_update_log_replays_with_its_expiry_times(tmp_path: pathlib.Path) -> None:
    prefix = tmp_path / "log"
    source = kuradb.DBM(tmp_path / "a.kt", True, expiry=True, ulog_prefix=str(prefix))
    source.set("later", "1", ttl=3600)
    source.set("never", "2")
    at = source.expiry("later")
    source.close()
    mirror = kuradb.DBM(tmp_path / "b.kh", True, expiry=True)
    assert mirror.apply_update_logs(str(prefix)) > 0
    assert mirror["later"] == b"1" and mirror["never"] == b"2"
    assert mirror.expiry("later") == at and mirror.ttl("never") is None
    assert len(mirror) == 2
    mirror.close()
