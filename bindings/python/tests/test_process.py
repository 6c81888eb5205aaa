"""One handle per file per process, handles after fork, and lock waits.

A second open of a file this process holds for writing raises at once (it
used to hang, deaf to Ctrl-C); a handle used in a child made by fork (what
multiprocessing does on Linux) raises and leaves the parent's database
intact; a wait for another process's lock gives up after lock_timeout and
ends on Ctrl-C.
"""

import gc
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import kuradb


@pytest.mark.parametrize("name", ["casket.kh", "casket.kt", "casket.tks"])
def test_a_second_open_beside_a_writer_raises_at_once(tmp_path, name):
    path = str(tmp_path / name)
    with kuradb.DBM(path, True) as db:
        db["k"] = "v"
        db.synchronize()
        start = time.monotonic()
        with pytest.raises(kuradb.WouldBlockError, match="already open for writing in this process"):
            kuradb.DBM(path, True)
        with pytest.raises(kuradb.WouldBlockError, match="already open"):
            kuradb.DBM(path, False)
        assert time.monotonic() - start < 2
        assert db["k"] == b"v"
    with kuradb.DBM(path, True) as again:
        assert again["k"] == b"v"


def test_readers_share_a_file(tmp_path):
    path = str(tmp_path / "casket.kh")
    with kuradb.DBM(path, True) as db:
        db["k"] = "v"
    with kuradb.DBM(path, False) as a, kuradb.DBM(path, False) as b:
        assert a["k"] == b["k"] == b"v"
        with pytest.raises(kuradb.WouldBlockError, match="already open for reading"):
            kuradb.DBM(path, True)


def _use_in_child(db, queue):
    outcomes = []
    for name, call in [
        ("get", lambda: db.get("k")),
        ("set", lambda: db.set("k", "child")),
        ("remove", lambda: db.remove("key1")),
        ("synchronize", lambda: db.synchronize(True)),
        ("len", lambda: len(db)),
    ]:
        try:
            call()
            outcomes.append((name, "no error"))
        except kuradb.InfeasibleError as e:
            outcomes.append((name, "refused" if "another process" in str(e) else str(e)))
        except Exception as e:  # noqa: BLE001 - reported to the parent
            outcomes.append((name, repr(e)))
    # A child that drops its handle before it exits: nothing may reach the file.
    del db
    gc.collect()
    queue.put(outcomes)


@pytest.mark.skipif(sys.platform != "linux", reason="fork is the default start method only on Linux")
@pytest.mark.parametrize("name", ["casket.kh", "casket.kt", "casket.tks", "casket.flat"])
def test_a_handle_used_after_fork_raises_and_the_parent_keeps_its_data(tmp_path, name):
    path = str(tmp_path / name)
    ctx = multiprocessing.get_context("fork")
    db = kuradb.DBM(path, True)
    for i in range(500):
        db[f"key{i}"] = f"value{i}"
    db["k"] = "parent"
    db.synchronize()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    queue = ctx.Queue()
    child = ctx.Process(target=_use_in_child, args=(db, queue))
    child.start()
    outcomes = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert all(outcome == "refused" for _, outcome in outcomes), outcomes
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert db["k"] == b"parent"
    db["after"] = "fork"
    db.close()
    with kuradb.DBM(path, False) as reopened:
        assert len(reopened) == 502
        assert reopened["key1"] == b"value1"
        assert reopened["after"] == b"fork"


def _child_opens_its_own(path, queue):
    with kuradb.DBM(path, False) as db:
        queue.put(db.get_str("k"))


@pytest.mark.skipif(sys.platform != "linux", reason="fork is the default start method only on Linux")
def test_a_forked_child_opens_the_database_for_itself(tmp_path):
    path = str(tmp_path / "casket.kh")
    with kuradb.DBM(path, True) as db:
        db["k"] = "v"
    ctx = multiprocessing.get_context("fork")
    with kuradb.DBM(path, False):
        queue = ctx.Queue()
        child = ctx.Process(target=_child_opens_its_own, args=(path, queue))
        child.start()
        assert queue.get(timeout=60) == "v"
        child.join(timeout=60)
        assert child.exitcode == 0


@pytest.fixture
def held_by_another_process(tmp_path):
    """A database at a path that another process holds open for writing."""
    path = str(tmp_path / "casket.kh")
    kuradb.DBM(path, True).close()
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, kuradb\n"
         "db = kuradb.DBM(sys.argv[1], True)\n"
         "print('holding', flush=True)\n"
         "time.sleep(60)\n",
         path],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        yield path
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_a_lock_wait_gives_up_after_lock_timeout(held_by_another_process):
    start = time.monotonic()
    with pytest.raises(kuradb.WouldBlockError, match="gave up waiting"):
        kuradb.DBM(held_by_another_process, True, lock_timeout=0.3)
    assert 0.3 <= time.monotonic() - start < 5
    with pytest.raises(kuradb.WouldBlockError, match="locked"):
        kuradb.DBM(held_by_another_process, True, no_wait=True)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                    reason="signals reach only the main thread")
def test_ctrl_c_ends_a_lock_wait(held_by_another_process):
    # A process started in the background by a shell without job control
    # inherits SIGINT ignored, and Python then leaves it ignored: give it
    # Python's usual handler for this test, as an interactive run has.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            kuradb.DBM(held_by_another_process, True, wait=True)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < 5


_WRITER = """
import random, sys, kuradb
path, seed = sys.argv[1], int(sys.argv[2])
params = dict(p.split("=", 1) for p in sys.argv[3:])
rng = random.Random(seed)
db = kuradb.DBM(path, True, **params)
print("open", flush=True)
n = 0
while True:
    db[str(rng.randrange(5000))] = str(rng.random()) * rng.randrange(1, 20)
    n += 1
    if n % 500 == 0:
        db.synchronize(True)
"""


@pytest.mark.parametrize("name,params", [
    ("casket.kh", []),
    ("casket.kh", ["update_mode=appending"]),
    ("casket.kt", []),
])
def test_after_a_crash_every_open_sees_the_same_database(tmp_path, name, params):
    """The reader of a crashed file sees what the next writer's restore makes."""
    path = str(tmp_path / name)
    for cycle in range(6):
        writer = subprocess.Popen([sys.executable, "-c", _WRITER, path, str(cycle), *params],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert writer.stdout.readline().strip() == "open"
            time.sleep(0.05 + 0.05 * cycle)
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait(timeout=30)
        with kuradb.DBM(path, False) as reader:
            seen = dict(reader.items())
        with kuradb.DBM(path, False) as reader:
            assert dict(reader.items()) == seen, f"cycle {cycle}: two readers differ"
        with kuradb.DBM(path, True) as restored:
            after = dict(restored.items())
        assert after == seen, (
            f"cycle {cycle}: {len(set(after.items()) ^ set(seen.items()))} records differ "
            "between the reader's view and the restore")


def test_a_callback_that_uses_its_own_database_raises_instead_of_hanging(tmp_path):
    with kuradb.DBM(str(tmp_path / "a.kh"), True) as db, kuradb.DBM(str(tmp_path / "b.kh"), True) as other:
        db["k"] = "v"
        seen = []

        def reenter(value):
            seen.append(value)
            db.get("k")

        with pytest.raises(kuradb.InfeasibleError, match="inside one of its callbacks"):
            db.process("k", reenter)
        with pytest.raises(kuradb.InfeasibleError, match="inside one of its callbacks"):
            db.process_each(lambda k, v: db.set("x", "y"))
        with pytest.raises(kuradb.InfeasibleError):
            db.process("k", lambda v: db.close())
        # Another database is fine inside a callback.
        db.process("k", lambda v: other.set("copied", v) and None)
        assert other["copied"] == b"v"
        assert db["k"] == b"v" and seen == [b"v"]
