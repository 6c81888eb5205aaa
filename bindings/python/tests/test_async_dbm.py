"""kuradb.AsyncDBM under asyncio: awaiting and gathering operations, errors
raised as kuradb's exceptions, blocking get() outside a loop, and close
draining what is pending."""

import asyncio
import threading

import pytest

import kuradb


@pytest.fixture(params=["hash", "tree", "tiny"])
def db(request, tmp_path):
    ext = {"hash": "kh", "tree": "kt", "tiny": "flat"}[request.param]
    path = tmp_path / f"casket.{ext}"
    d = kuradb.DBM(str(path), True, dbm=request.param, truncate=True)
    yield d
    if d.is_open():
        d.close()


def test_every_operation_awaited(db, tmp_path):
    async def main():
        with kuradb.AsyncDBM(db, 3) as adb:
            assert await adb.set("a", "1") is None
            assert await adb.get("a") == b"1"
            assert await adb.get_str("a") == "1"
            assert await adb.get("missing") is None
            assert await adb.contains("a") is True
            await adb.set_multi({"b": "2", "c": "3"}, d="4")
            assert await adb.get_multi(["a", "b", "zz", b"d"]) == {"a": b"1", "b": b"2", b"d": b"4"}
            assert await adb.remove("d") is True
            assert await adb.remove("d") is False
            assert await adb.remove_multi(["b", "c", "zz"]) == 2
            await adb.append("a", "x", ":")
            await adb.append_multi({"a": "y", "n": "z"}, delim="/")
            assert db["a"] == b"1:x/y" and db["n"] == b"z"
            assert await adb.compare_exchange("a", "1:x/y", "2") is True
            assert await adb.compare_exchange("a", "nope", "3") is False
            assert await adb.increment("cnt", 5, 10) == 15
            assert await adb.increment("cnt", None) == 15
            assert await adb.compare_exchange_multi({"a": "2", "gone": None}, [("a", None), ("e", "5")]) is True
            assert await adb.compare_exchange_multi({"e": "wrong"}, {"e": "6"}) is False
            assert "a" not in db and db["e"] == b"5"
            await adb.rekey("e", "f")
            assert "e" not in db and db["f"] == b"5"
            await adb.synchronize(False)
            await adb.rebuild()
            dest = kuradb.DBM(str(tmp_path / "dest.kh"), True, truncate=True)
            await adb.export(dest)
            assert dest["f"] == b"5" and len(dest) == len(db)
            dest.close()
            await adb.copy_file_data(str(tmp_path / "copy"))
            await adb.clear()
            assert len(db) == 0

    asyncio.run(main())


def test_gather_over_many(db):
    async def main():
        adb = kuradb.AsyncDBM(db, 4)
        await asyncio.gather(*(adb.set(f"k{i}", f"v{i}") for i in range(1000)))
        values = await asyncio.gather(*(adb.get(f"k{i}") for i in range(1000)))
        assert values == [f"v{i}".encode() for i in range(1000)]
        counts = await asyncio.gather(*(adb.increment("n") for _ in range(300)))
        assert sorted(counts) == list(range(1, 301))
        adb.close()

    asyncio.run(main())
    assert len(db) == 1001


def test_errors_are_kuradbs_exceptions(db):
    async def main():
        adb = kuradb.AsyncDBM(db, 2)
        await adb.set("k", "v")
        with pytest.raises(kuradb.DuplicationError, match="exists"):
            await adb.set("k", "w", overwrite=False)
        with pytest.raises(kuradb.NotFoundError):
            await adb.rekey("missing", "x")
        with pytest.raises(kuradb.InvalidArgumentError):
            await adb.increment("k", 1)
        with pytest.raises(kuradb.InvalidArgumentError, match="no_such_parameter"):
            await adb.rebuild(no_such_parameter=1)
        with pytest.raises(TypeError):
            adb.get(12)
        # The same future raises again, and the workers go on.
        failed = adb.set("k", "w", overwrite=False)
        for _ in range(2):
            with pytest.raises(kuradb.DuplicationError):
                await failed
        assert await adb.get("k") == b"v"
        adb.close()

    asyncio.run(main())


def test_blocking_get_outside_a_loop(db):
    with kuradb.AsyncDBM(db, 2) as adb:
        future = adb.set("k", "v")
        assert future.wait(30) is True and future.done()
        assert future.get() is None
        assert adb.get("k").get() == b"v"
        with pytest.raises(kuradb.DuplicationError):
            adb.set("k", "w", False).get()
        with pytest.raises(ValueError):
            future.wait(-1)


def test_awaiting_without_a_running_loop_says_so(db):
    with kuradb.AsyncDBM(db, 1) as adb:
        future = adb.get("k")
        with pytest.raises(RuntimeError, match="running asyncio event loop"):
            future.__await__()
        assert future.get() is None


def test_close_drains_pending_operations(db):
    async def main():
        adb = kuradb.AsyncDBM(db, 1)
        futures = [adb.set(f"k{i}", "v") for i in range(500)]
        adb.close()
        assert all(f.done() for f in futures)
        await asyncio.gather(*futures)
        with pytest.raises(kuradb.InfeasibleError, match="closed"):
            adb.get("k0")
        adb.close()
        assert adb.is_closed()

    asyncio.run(main())
    assert len(db) == 500


def test_close_from_another_thread_while_coroutines_wait(db):
    async def main():
        adb = kuradb.AsyncDBM(db, 2)
        futures = [adb.set(f"k{i}", "v") for i in range(300)]
        closer = threading.Thread(target=adb.close)
        closer.start()
        await asyncio.gather(*futures)
        closer.join()
        assert adb.is_closed()

    asyncio.run(main())
    assert len(db) == 300


def test_the_dbm_stays_open_while_an_async_dbm_uses_it(db):
    adb = kuradb.AsyncDBM(db, 1)
    with pytest.raises(kuradb.InfeasibleError, match="AsyncDBM"):
        db.close()
    assert db.is_open()
    adb.set("k", "v").get()
    adb.close()
    db.close()
    with pytest.raises(kuradb.InfeasibleError):
        kuradb.AsyncDBM(db, 1)


def test_zero_workers_is_refused(db):
    with pytest.raises(kuradb.InvalidArgumentError, match="worker"):
        kuradb.AsyncDBM(db, 0)
    db.close()  # the refused AsyncDBM does not hold it


def test_dropping_drains_and_frees_the_dbm(db):
    adb = kuradb.AsyncDBM(db, 1)
    futures = [adb.set(f"k{i}", "v") for i in range(200)]
    del adb  # collected at once: drains with the GIL released
    assert all(f.done() for f in futures)
    assert [f.get() for f in futures] == [None] * 200
    assert len(db) == 200
    db.close()


def test_a_coroutine_awaiting_while_another_thread_blocks_on_the_same_future(db):
    async def main():
        with kuradb.AsyncDBM(db, 1) as adb:
            future = adb.increment("n", 1)
            results = []
            blocker = threading.Thread(target=lambda: results.append(future.get()))
            blocker.start()
            assert await future == 1
            blocker.join()
            assert results == [1]

    asyncio.run(main())


def test_threads_awaiting_and_blocking_on_the_same_futures_never_stall(db):
    # Each thread awaits the same future on an event loop of its own while
    # another blocks on it with get(): none of them may hold a lock of the
    # future while it waits for the GIL that another holds.
    with kuradb.AsyncDBM(db, 1) as adb:
        for round in range(30):
            future = adb.increment("n", 1)
            results = []

            def await_it():
                async def main():
                    return await future

                results.append(asyncio.run(main()))

            # Daemons: a stalled one fails the test rather than the exit.
            threads = [threading.Thread(target=await_it, daemon=True) for _ in range(2)]
            threads.append(threading.Thread(target=lambda: results.append(future.get()), daemon=True))
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=20)
            assert not any(t.is_alive() for t in threads), f"round {round}: a thread stalled"
            assert results == [round + 1] * 3
