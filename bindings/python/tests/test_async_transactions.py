"""AsyncDBM.transaction(), .batch() and .snapshot() under asyncio: async
context managers that commit on a normal exit and abort or discard on an
exception, reads and commits as awaited futures, conflicts, savepoints, a
snapshot while a writer goes on, and calls once finished or closed."""

import asyncio

import pytest

import kuradb


@pytest.fixture(params=["tkh", "tkt"])
def db(request, tmp_path):
    d = kuradb.DBM(tmp_path / f"casket.{request.param}", True)
    yield d
    if d.is_open():
        d.close()


def test_a_transaction_commits_on_exit_and_reads_its_own_writes(db):
    db["a"] = "1"

    async def main():
        with kuradb.AsyncDBM(db, 2) as adb:
            async with adb.transaction("sync") as tx:
                assert tx.durability == "sync"
                assert await tx.get("a") == b"1"
                tx.set("a", "2")
                tx.set("b", "x")
                await tx.append("b", "y", ",")
                assert await tx.increment("n", 7) == 7
                assert await tx.remove("a") is True
                assert await tx.contains("a") is False
                assert await tx.get("b") == b"x,y"
                assert (b"b", b"x,y") in await tx.items()
                assert "b" not in db
            assert not tx.active
            tx = adb.transaction()
            tx.set("c", "3")
            await tx.commit()
            with pytest.raises(kuradb.InfeasibleError, match="finished"):
                await tx.commit()

    asyncio.run(main())
    assert "a" not in db and db["b"] == b"x,y" and db["c"] == b"3"
    assert db.increment("n", 0) == 7


def test_an_exception_aborts_and_goes_on(db):
    async def main():
        with kuradb.AsyncDBM(db, 2) as adb:
            with pytest.raises(ValueError, match="the work failed"):
                async with adb.transaction() as tx:
                    tx.set("a", "1")
                    raise ValueError("the work failed")
            assert not tx.active
            tx = adb.transaction("none")
            tx.set("b", "1")
            await tx.abort()
            await tx.abort()
            assert not tx.active
            with pytest.raises(ValueError, match="durability"):
                adb.transaction("fast")

    asyncio.run(main())
    assert len(db) == 0


def test_a_conflict_raises_conflict_error_and_applies_nothing(db):
    db["a"] = "1"

    async def main():
        with kuradb.AsyncDBM(db, 2) as adb:
            first, second = adb.transaction(), adb.transaction()
            assert await first.get("a") == b"1"
            assert await second.get("a") == b"1"
            first.set("a", "2")
            second.set("a", "3")
            second.set("c", "3")
            await first.commit()
            with pytest.raises(kuradb.ConflictError):
                await second.commit()
            assert not second.active

    asyncio.run(main())
    assert db["a"] == b"2" and "c" not in db


def test_savepoints(db):
    async def main():
        with kuradb.AsyncDBM(db, 1) as adb:
            async with adb.transaction() as tx:
                tx.set("a", "1")
                point = tx.savepoint()
                tx.set("b", "2")
                assert await tx.remove("a") is True
                tx.rollback_to(point)
                assert await tx.get("a") == b"1"
                assert await tx.get("b") is None

    asyncio.run(main())
    assert db["a"] == b"1" and "b" not in db


def test_a_snapshot_keeps_its_state_while_a_writer_goes_on(db):
    db["a"] = "1"
    db["b"] = "2"

    async def writer(adb):
        for i in range(50):
            await adb.set("a", str(i + 10))
            await adb.set(f"w{i}", "x")
        await adb.remove("b")

    async def main():
        with kuradb.AsyncDBM(db, 3) as adb:
            async with adb.snapshot() as view:
                await writer(adb)
                assert await view.get("a") == b"1"
                assert await view.count() == 2
                assert sorted(await view.keys()) == [b"a", b"b"]
                assert sorted(await view.items()) == [(b"a", b"1"), (b"b", b"2")]
                assert sorted(await view.values()) == [b"1", b"2"]
                assert len(db) == 51
            assert not view.active
            with pytest.raises(kuradb.InfeasibleError, match="released"):
                await view.count()

    asyncio.run(main())


def test_a_batch_commits_on_exit_and_discards_on_an_exception(db):
    db["gone"] = "x"

    async def main():
        with kuradb.AsyncDBM(db, 2) as adb:
            async with adb.batch("sync") as b:
                b.set("a", "1")
                b.set("b", "x")
                b.append("b", "y", ",")
                b.remove("gone")
                b.increment("n", 5, 10)
                assert len(b) == 5
                assert "a" not in db
            assert not b.active
            with pytest.raises(kuradb.InfeasibleError):
                b.set("c", "1")
            with pytest.raises(RuntimeError):
                async with adb.batch() as b:
                    b.set("discarded", "1")
                    raise RuntimeError("no")
            b = adb.batch("none")
            b.set("c", "1")
            await b.commit()

    asyncio.run(main())
    assert db["a"] == b"1" and db["b"] == b"x,y" and "gone" not in db and "discarded" not in db
    assert db.increment("n", 0) == 15 and db["c"] == b"1"


def test_concurrent_transactions_retried_by_hand_all_count(db):
    db["n"] = "0"

    async def bump(adb):
        while True:
            tx = adb.transaction()
            try:
                n = int(await tx.get("n"))
                tx.set("n", str(n + 1))
                await tx.commit()
                return
            except kuradb.ConflictError:
                continue
            finally:
                await tx.abort()

    async def main():
        with kuradb.AsyncDBM(db, 4) as adb:
            await asyncio.gather(*(bump(adb) for _ in range(20)))

    asyncio.run(main())
    assert db["n"] == b"20"


def test_calls_once_the_async_dbm_is_closed(db):
    async def main():
        adb = kuradb.AsyncDBM(db, 1)
        tx = adb.transaction()
        view = adb.snapshot()
        b = adb.batch()
        b.set("a", "1")
        adb.close()
        with pytest.raises(kuradb.InfeasibleError, match="AsyncDBM is closed"):
            tx.get("a")
        with pytest.raises(kuradb.InfeasibleError, match="AsyncDBM is closed"):
            view.count()
        with pytest.raises(kuradb.InfeasibleError, match="AsyncDBM is closed"):
            b.commit()
        with pytest.raises(kuradb.InfeasibleError, match="AsyncDBM is closed"):
            adb.transaction()
        with pytest.raises(ZeroDivisionError):
            async with tx:
                1 / 0
        assert not tx.active
        view.release()

    asyncio.run(main())
    db.close()


def test_run_retries_a_conflict_and_gives_up_after_its_retries(db):
    db["n"] = "0"
    calls = []

    async def bump(tx):
        n = await tx.get("n")
        calls.append(n)
        if len(calls) == 1:
            # A plain write after this transaction read "n": a conflict.
            db["n"] = "5"
        tx.set("n", str(int(await tx.get("n")) + 1))
        return n

    async def always_conflicts(tx):
        calls.append(await tx.get("n"))
        db["n"] = f"again{len(calls)}"
        tx.set("n", "lost")

    def fails(tx):
        calls.append(None)
        tx.set("n", "never")
        raise ZeroDivisionError

    async def main():
        with kuradb.AsyncDBM(db, 2) as adb:
            assert await adb.run(bump, retries=3, durability="sync") == b"5"
            assert calls == [b"0", b"5"] and db["n"] == b"6"
            calls.clear()
            with pytest.raises(kuradb.ConflictError):
                await adb.run(always_conflicts, retries=2)
            assert len(calls) == 3 and db["n"] == b"again3"
            calls.clear()
            with pytest.raises(ZeroDivisionError):
                await adb.run(fails, retries=5)
            assert calls == [None] and db["n"] == b"again3"
            with pytest.raises(ValueError, match="retries"):
                await adb.run(bump, retries=-1)

    asyncio.run(main())


def test_transactional_decorates_a_coroutine_for_an_async_dbm(db):
    db["alice"] = "100"
    db["bob"] = "0"
    tries = []

    async def main():
        with kuradb.AsyncDBM(db, 2) as adb:

            @kuradb.transactional(adb, retries=3, durability="sync")
            async def transfer(tx, source, dest, amount):
                balance = int(await tx.get(source))
                tries.append(balance)
                if len(tries) == 1:
                    # A plain write after it read the source: a conflict, retried.
                    db[source] = str(balance + 1)
                tx.set(source, str(int(await tx.get(source)) - amount))
                tx.set(dest, str(int(await tx.get(dest)) + amount))
                return amount

            @kuradb.transactional(adb)
            def plain(tx):
                tx.set("plain", "yes")
                return "done"

            assert transfer.__name__ == "transfer"
            assert await transfer("alice", "bob", 30) == 30
            assert tries == [100, 101]
            assert await plain() == "done"

    asyncio.run(main())
    assert db["alice"] == b"71" and db["bob"] == b"30" and db["plain"] == b"yes"

    async def not_async_db(tx):
        pass

    with pytest.raises(TypeError, match="not an AsyncDBM"):
        kuradb.transactional(db)(not_async_db)
