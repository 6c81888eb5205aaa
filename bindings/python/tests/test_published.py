"""Published directories from Python: ``kuradb.PublishJob`` stages and
commits versions, ``kuradb.DBM(dir)`` opens the current one read-only, and
``kuradb.shard_of`` is the routing a shard set uses."""

from __future__ import annotations

import json
import pathlib

import pytest

import kuradb


def publish(directory: pathlib.Path, job_id: str, records: dict[str, str], num_shards: int = 3, **params) -> int:
    """Stages every shard (one attempt each, keys routed by shard_of) and commits."""
    job = kuradb.PublishJob(directory, job_id, num_shards, **(params or {"dbm": "hash"}))
    for shard in range(num_shards):
        with job.stage(shard, "0") as db:
            for key, value in records.items():
                if kuradb.shard_of(key, num_shards) == shard:
                    db[key] = value
    return job.commit({shard: "0" for shard in range(num_shards)})


def test_dbm_opens_the_current_version_read_only(tmp_path: pathlib.Path) -> None:
    records = {f"k{i}": f"v{i}" for i in range(50)}
    assert publish(tmp_path, "first", records, dbm="tree", max_page_size=4000) == 1
    with kuradb.DBM(tmp_path) as db:
        assert len(db) == 50 and db["k7"] == b"v7"
        assert db.is_ordered() and list(db.keys())[:2] == [b"k0", b"k1"]
        with pytest.raises(kuradb.ReadOnlyError):
            db["x"] = "y"
    with pytest.raises(kuradb.ReadOnlyError, match="versions are immutable"):
        kuradb.DBM(tmp_path, True)
    manifest = json.loads((tmp_path / "v-1" / "MANIFEST.json").read_text())
    assert manifest["class"] == "tree" and manifest["params"] == {"max_page_size": "4000"}
    assert [s["file"] for s in manifest["shards"]] == [f"db.kt-0000{i}-of-00003" for i in range(3)]
    assert kuradb.verify_published(tmp_path)["records"] == "50"
    # A new version: a reader opened before keeps its own, a new one sees it.
    old = kuradb.DBM(tmp_path)
    assert publish(tmp_path, "second", {"only": "one"}) == 2
    with kuradb.DBM(tmp_path) as db:
        assert dict(db.items()) == {b"only": b"one"}
    assert len(old) == 50
    old.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["CURRENT", "LOCK", "v-1", "v-2"]


def test_a_job_commits_the_attempts_it_chooses(tmp_path: pathlib.Path) -> None:
    job = kuradb.PublishJob(tmp_path, "job", 2, dbm="hash")
    key = next(k for k in (f"k{i}" for i in range(100)) if kuradb.shard_of(k, 2) == 0)
    for attempt, value in (("a", "first"), ("b", "second")):
        with job.stage(0, attempt) as db:
            db[key] = value
    with pytest.raises(kuradb.DuplicationError, match="shard 0 is committed twice"):
        job.commit([(0, "a"), (0, "b"), (1, "a")])
    with pytest.raises(kuradb.NotFoundError, match="no attempt is committed for shard 1 of 2"):
        job.commit({0: "b"})
    assert not (tmp_path / "CURRENT").exists()
    assert job.commit({0: "b"}, create_missing=True) == 1
    assert not (tmp_path / "_staging").exists()
    with kuradb.DBM(tmp_path) as db:
        assert len(db) == 1 and db[key] == b"second"
    aborted = kuradb.PublishJob(tmp_path, "aborted", 2, dbm="hash")
    aborted.stage(1, "0").close()
    aborted.abort()
    assert not (tmp_path / "_staging").exists()


def test_an_appending_job_keeps_the_current_records(tmp_path: pathlib.Path) -> None:
    publish(tmp_path, "base", {"a": "1", "b": "2"}, num_shards=2)
    job = kuradb.PublishJob.appending(tmp_path, "more")
    assert job.num_shards == 2
    shard = kuradb.shard_of("c", 2)
    with job.stage(shard, "0") as db:
        db["c"] = "3"
    assert job.commit({shard: "0"}, create_missing=True) == 2
    with kuradb.DBM(tmp_path) as db:
        assert dict(db.items()) == {b"a": b"1", b"b": b"2", b"c": b"3"}


def test_shard_of_is_the_routing_of_a_shard_set(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "casket.kh"
    with kuradb.DBM(path, True, num_shards=4) as db:
        for i in range(100):
            db[f"key{i}"] = "v"
    for i in range(100):
        key = f"key{i}"
        home = kuradb.shard_of(key, 4)
        assert kuradb.shard_of(key.encode(), 4) == home
        for shard in range(4):
            with kuradb.DBM(f"{path}-0000{shard}-of-00004", dbm="hash") as one:
                assert (key in one) == (shard == home)
    assert kuradb.shard_of(b"", 1) == 0
    for bad in (0, -1, 100000):
        with pytest.raises(kuradb.InvalidArgumentError, match="from 1 to 99999"):
            kuradb.shard_of("k", bad)
    with pytest.raises(TypeError):
        kuradb.shard_of(3, 2)  # type: ignore[arg-type]
