"""`release_gil`: whether another Python thread runs while a call works in
the database. A background thread counts while the main thread calls the
database; the counter can only move during a call that released the GIL."""

from __future__ import annotations

import contextlib
import pathlib
import subprocess
import sys
import threading
import time
from typing import Iterator

import kuradb
from kuradb.compat import tkrzw


class Counter:
    """A thread that counts until stopped, giving the GIL up after each
    step (`time.sleep(0)` releases it), so the main thread never waits for
    a switch interval to get it back."""

    def __init__(self) -> None:
        self.count = 0
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop:
            self.count += 1
            time.sleep(0)


@contextlib.contextmanager
def counting() -> Iterator[Counter]:
    """A counter running in the background. The switch interval is long, so
    that Python never takes the GIL from a thread that holds it: a call
    longer than the interval would have it taken right after it returns,
    before the counter is read."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    counter = Counter()
    counter.thread.start()
    try:
        yield counter
    finally:
        counter.stop = True
        counter.thread.join()
        sys.setswitchinterval(interval)


def moved_during(counter: Counter, call) -> int:
    """How far the counter moved while `call` ran."""
    before = counter.count
    call()
    return counter.count - before


def releases(call) -> bool:
    """Whether the counter moves during `call` (tried a few times: the
    counting thread may not be scheduled at once on a busy machine)."""
    with counting() as counter:
        return any(moved_during(counter, call) > 0 for _ in range(5))


def holds(call) -> bool:
    """Whether the counter never moves during `call`."""
    with counting() as counter:
        return all(moved_during(counter, call) == 0 for _ in range(3))


def filled(path: pathlib.Path, **params) -> kuradb.DBM:
    db = kuradb.DBM(path, True, truncate=True, **params)
    db.set_multi({f"{i:08d}": "v" * 50 for i in range(20000)})
    return db


def test_release_gil_false_keeps_the_gil(tmp_path: pathlib.Path) -> None:
    db = filled(tmp_path / "held.kh", release_gil=False)
    assert holds(db.rebuild)
    keys = [f"{i:08d}" for i in range(20000)]
    assert holds(lambda: db.get_multi(keys))
    db.close()
    # A reopened database takes the keyword of its new open.
    db.open(tmp_path / "held.kh", True)
    assert releases(db.rebuild)
    db.close()


def test_calls_release_the_gil_by_default(tmp_path: pathlib.Path) -> None:
    db = filled(tmp_path / "released.kh")
    assert releases(db.rebuild)
    db.close()


def test_held_gil_with_callbacks_and_threads(tmp_path: pathlib.Path) -> None:
    # Callbacks take the GIL back while their record is locked; with the GIL
    # held through every call, threads must still all finish.
    db = kuradb.DBM(tmp_path / "threads.kh", True, truncate=True, release_gil=False)

    def work(n: int) -> None:
        for i in range(300):
            db.process(f"k{i % 7}", lambda v: str(int(v or b"0") + 1).encode(), True)
            db.set(f"t{n}-{i}", "x")
            assert db.get(f"t{n}-{i}") == b"x"

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a thread did not finish"
    assert sum(int(db.get(f"k{i}")) for i in range(7)) == 4 * 300
    db.close()


def test_held_gil_waits_for_a_callback_that_gave_the_gil_up(tmp_path: pathlib.Path) -> None:
    # A callback's Python code gives the GIL up (here in time.sleep; in any
    # code at a switch interval) while its record stays locked. A call of
    # another thread that kept the GIL and waited for that lock would
    # deadlock both, so it runs in a child process that a deadlock cannot hang.
    program = f"""
import threading, time, kuradb
db = kuradb.DBM({str(tmp_path / "sleepy.kh")!r}, True, truncate=True, release_gil=False)
db.set("k", "0")
inside = threading.Event()
def slow(value):
    inside.set()
    time.sleep(0.3)
    return b"1"
t = threading.Thread(target=lambda: db.process("k", slow, True))
t.start()
inside.wait()
assert db.get("k") == b"1", db.get("k")
t.join()
db.close()
print("finished")
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "finished"


def test_compat_releases_only_when_concurrent(tmp_path: pathlib.Path) -> None:
    for concurrent in [False, True]:
        dbm = tkrzw.DBM()
        params = {"concurrent": True} if concurrent else {}
        assert dbm.Open(str(tmp_path / f"c{concurrent}.tkh"), True, truncate=True, **params).IsOK()
        for i in range(20000):
            dbm.Set(f"{i:08d}", "v" * 50)
        assert (releases if concurrent else holds)(dbm.Rebuild)
        assert dbm.Close().IsOK()
