"""Transactions, batches and snapshots of kuradb.DBM (docs/python.md, "Transactions")."""

import threading

import pytest

import kuradb


@pytest.fixture(params=["tkh", "tkt"])
def db(tmp_path, request):
    with kuradb.DBM(tmp_path / f"casket.{request.param}", True) as opened:
        yield opened


def test_commit_applies_and_abort_discards(db):
    db["a"] = "1"
    tx = db.transaction()
    assert tx.get("a") == b"1"
    assert tx.get("missing") is None and tx.get("missing", b"d") == b"d"
    tx.set("a", "2")
    tx["b"] = "3"
    assert tx["b"] == b"3" and "b" in tx and "b" not in db
    assert tx.remove("nothing") is False
    tx.commit()
    assert not tx.active
    assert db["a"] == b"2" and db["b"] == b"3"

    tx = db.transaction("sync")
    del tx["a"]
    tx["c"] = "4"
    assert "a" not in tx
    with pytest.raises(KeyError):
        del tx["zzz"]
    with pytest.raises(KeyError):
        tx["a"]
    tx.abort()
    assert db["a"] == b"2" and "c" not in db
    with pytest.raises(kuradb.InfeasibleError):
        tx.commit()
    with pytest.raises(kuradb.InfeasibleError):
        tx.get("a")


def test_context_manager_commits_and_an_exception_aborts(db):
    with db.transaction() as tx:
        tx["k"] = "v"
        assert tx.increment("n", 5) == 5
        tx.append("k", "w", ",")
    assert db["k"] == b"v,w" and db.increment("n", 0) == 5

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with db.transaction() as tx:
            tx["k"] = "lost"
            raise Boom()
    assert db["k"] == b"v,w"
    assert not tx.active

    # Finishing inside the block is fine: the exit does nothing more.
    with db.transaction() as tx:
        tx["k"] = "x"
        tx.abort()
    assert db["k"] == b"v,w"


def test_savepoints_roll_back_the_later_writes(db):
    with db.transaction() as tx:
        tx["a"] = "1"
        sp = tx.savepoint()
        tx["b"] = "2"
        tx["a"] = "changed"
        tx.rollback_to(sp)
        assert tx["a"] == b"1" and "b" not in tx
        tx["c"] = "3"
    assert dict(db.items()) == {b"a": b"1", b"c": b"3"}


def test_a_conflict_raises_conflict_error(db):
    db["x"] = "0"
    first = db.transaction()
    second = db.transaction()
    first["x"] = str(int(first["x"]) + 1)
    second["x"] = str(int(second["x"]) + 1)
    first.commit()
    with pytest.raises(kuradb.ConflictError) as raised:
        second.commit()
    assert isinstance(raised.value, kuradb.Error)
    assert issubclass(kuradb.ConflictError, kuradb.Error)
    assert db["x"] == b"1"
    assert not second.active


def test_run_and_the_decorator_retry_under_contention_from_threads(db):
    db["counter"] = "0"
    threads, per_thread = 4, 25

    @kuradb.transactional(db, retries=1000)
    def bump(tx, by):
        tx["counter"] = str(int(tx["counter"]) + by)
        return by

    errors = []

    def work():
        try:
            for _ in range(per_thread):
                assert bump(1) == 1
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    assert int(db["counter"]) == threads * per_thread

    assert db.run(lambda tx: tx.increment("n", 10), retries=3) == 10
    assert db.run(lambda tx: tx.increment("n", 5), retries=0) == 15

    def always_conflicts(tx):
        tx["counter"]
        other = db.transaction()
        other["counter"] = "other"
        other.commit()
        tx["counter"] = "mine"

    with pytest.raises(kuradb.ConflictError):
        db.run(always_conflicts, retries=2)
    assert db["counter"] == b"other"

    with pytest.raises(ZeroDivisionError):
        db.run(lambda tx: (tx.set("y", "1"), 1 / 0))
    assert "y" not in db


def test_a_snapshot_sees_one_commit_while_others_write(db):
    db.update({"a": "1", "b": "2"})
    with db.snapshot() as snap:
        db["a"] = "changed"
        del db["b"]
        db["c"] = "new"
        with db.transaction() as tx:
            tx["d"] = "4"
        assert snap["a"] == b"1" and snap.get("b") == b"2"
        assert snap.get("c") is None and "d" not in snap and "a" in snap
        assert sorted(snap) == [b"a", b"b"]
        assert sorted(snap.keys()) == [b"a", b"b"]
        assert sorted(snap.items()) == [(b"a", b"1"), (b"b", b"2")]
        assert len(snap) == 2
    assert not snap.active
    with pytest.raises(kuradb.InfeasibleError):
        snap.get("a")
    assert db["a"] == b"changed" and set(db.keys()) == {b"a", b"c", b"d"}


def test_a_snapshot_while_a_thread_writes(db):
    for i in range(100):
        db[f"k{i:03}"] = "old"
    snap = db.snapshot()
    stop = threading.Event()

    def writer():
        n = 0
        while not stop.is_set():
            db[f"k{n % 100:03}"] = f"new{n}"
            n += 1

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(5):
            items = snap.items()
            assert len(items) == 100 and all(v == b"old" for _, v in items)
    finally:
        stop.set()
        t.join()
    snap.release()


def test_a_batch_is_atomic(db):
    db["gone"] = "x"
    seen = []
    with db.batch() as batch:
        for i in range(50):
            batch[f"b{i}"] = str(i)
        batch.remove("gone")
        batch.append("b0", "!", ":")
        batch.increment("count", 3)
        assert len(batch) == 53
        # Nothing is applied before the commit.
        seen.append(db.get("b1"))
    assert seen == [None]
    assert db["b0"] == b"0:!" and db["b49"] == b"49" and "gone" not in db
    assert db.increment("count", 0) == 3

    with pytest.raises(RuntimeError):
        with db.batch("sync") as batch:
            batch.set("never", "1")
            raise RuntimeError()
    assert "never" not in db
    with pytest.raises(kuradb.InfeasibleError):
        batch.set("late", "1")


def test_durability_strings(db):
    for name in ("none", "os", "sync"):
        with db.transaction(name) as tx:
            assert tx.durability == name
            tx[name] = name
        with db.batch(durability=name) as batch:
            batch[name + "-b"] = name
        assert db[name] == name.encode() and db[name + "-b"] == name.encode()
    for bad in ("fast", "", "SYNCED"):
        with pytest.raises(ValueError) as raised:
            db.transaction(bad)
        assert '"none", "os" or "sync"' in str(raised.value)
        with pytest.raises(ValueError):
            db.batch(bad)


def test_commits_persist_across_reopen_and_close_aborts_what_is_open(tmp_path):
    path = tmp_path / "casket.tkt"
    db = kuradb.DBM(path, True)
    with db.transaction("sync") as tx:
        tx["kept"] = "1"
    with db.batch("os") as batch:
        batch["batched"] = "2"
    open_tx = db.transaction()
    open_tx["lost"] = "3"
    snap = db.snapshot()
    db.close()
    assert not open_tx.active and not snap.active
    with pytest.raises(kuradb.InfeasibleError):
        open_tx.commit()
    assert not (tmp_path / "casket.tkt.txlog").exists()
    with kuradb.DBM(path) as reader:
        assert reader["kept"] == b"1" and reader["batched"] == b"2" and "lost" not in reader


def test_transactions_on_a_closed_database_and_in_memory():
    db = kuradb.DBM()
    with pytest.raises(kuradb.InfeasibleError):
        db.transaction()
    with pytest.raises(kuradb.InfeasibleError):
        db.snapshot()
    db.open("", True, dbm="stdtree")
    with db.transaction() as tx:
        tx["m"] = "1"
        assert [k for k, _ in tx.items()] == [b"m"]
    assert db["m"] == b"1"
    db.close()
