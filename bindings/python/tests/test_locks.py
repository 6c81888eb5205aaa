"""Another process's lock: an open fails at once by default, naming the
holder, and waits only when asked (wait=True, lock_timeout=...), in the
native API, kuradb.dbm, a forked child and a multiprocessing worker; the
reference-compatible layer waits, as the reference does, unless no_wait.
"""

import multiprocessing
import os
import subprocess
import sys
import time

import pytest

import kuradb
import kuradb.dbm
from kuradb.compat import tkrzw

_HOLD = """
import sys, time, kuradb
db = kuradb.DBM(sys.argv[1], True)
print('holding', flush=True)
time.sleep(float(sys.argv[2]))
db.close()
"""


def _hold(path, seconds):
    """A process that holds `path` open for writing for `seconds`, started
    and holding when this returns."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, path, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "holding"
    return holder


@pytest.fixture
def held(tmp_path):
    path = str(tmp_path / "casket.kh")
    with kuradb.DBM(path, True) as db:
        db["k"] = "v"
    holder = _hold(path, 60)
    try:
        yield path, holder.pid
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_an_open_beside_another_process_writer_fails_at_once_naming_it(held):
    path, pid = held
    for writable in (False, True):
        start = time.monotonic()
        with pytest.raises(kuradb.WouldBlockError) as raised:
            kuradb.DBM(path, writable)
        assert time.monotonic() - start < 2
        message = str(raised.value)
        assert path in message
        assert f"pid {pid}" in message and "open for writing" in message
        # The advice is spelled as this binding takes it.
        assert "wait=True" in message and "lock_timeout=SECONDS" in message


def test_kuradb_dbm_open_fails_at_once_like_dbm_gnu(held):
    path, pid = held
    start = time.monotonic()
    with pytest.raises(kuradb.dbm.error, match=f"pid {pid}"):
        kuradb.dbm.open(path, "r")
    assert time.monotonic() - start < 2


def _worker_opens(path, queue):
    start = time.monotonic()
    try:
        kuradb.DBM(path, False).close()
        queue.put(("opened", time.monotonic() - start))
    except kuradb.WouldBlockError as e:
        queue.put((str(e), time.monotonic() - start))


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_multiprocessing_worker_is_told_at_once_while_the_parent_writes(tmp_path, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    path = str(tmp_path / "casket.kh")
    ctx = multiprocessing.get_context(method)
    with kuradb.DBM(path, True) as db:
        db["k"] = "v"
        queue = ctx.Queue()
        worker = ctx.Process(target=_worker_opens, args=(path, queue))
        worker.start()
        answer, took = queue.get(timeout=120)
        worker.join(timeout=60)
    assert worker.exitcode == 0
    assert f"pid {os.getpid()}" in answer, answer
    assert took < 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_is_told_at_once_while_the_parent_writes(tmp_path):
    path = str(tmp_path / "casket.kh")
    with kuradb.DBM(path, True) as db:
        db["k"] = "v"
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report and leave without running the parent's cleanup
            code = 3
            try:
                start = time.monotonic()
                try:
                    kuradb.dbm.open(path, "r").close()
                    code = 1
                except kuradb.dbm.error as e:
                    code = 0 if time.monotonic() - start < 2 and f"pid {os.getppid()}" in str(e) else 2
                    os.write(write, str(e).encode())
            finally:
                os._exit(code)
        os.close(write)
        message = os.read(read, 4096).decode()
        os.close(read)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, message


def test_wait_true_waits_for_the_holder_to_close(tmp_path):
    path = str(tmp_path / "casket.kh")
    kuradb.DBM(path, True).close()
    holder = _hold(path, 1.0)
    try:
        start = time.monotonic()
        with kuradb.DBM(path, True, wait=True) as db:
            db["after"] = "the holder"
        assert time.monotonic() - start >= 0.5
    finally:
        holder.wait(timeout=30)


def test_lock_timeout_bounds_the_wait_and_contradictions_are_refused(held):
    path, pid = held
    start = time.monotonic()
    with pytest.raises(kuradb.WouldBlockError, match=f"gave up waiting.*pid {pid}"):
        kuradb.DBM(path, False, lock_timeout=0.3)
    assert 0.3 <= time.monotonic() - start < 5
    with pytest.raises(kuradb.InvalidArgumentError, match="contradict"):
        kuradb.DBM(path, False, no_wait=True, wait=True)


def test_the_compat_layer_waits_as_the_reference_does_unless_no_wait(tmp_path):
    path = str(tmp_path / "casket.tkh")
    kuradb.DBM(path, True).close()
    holder = _hold(path, 1.0)
    try:
        refused = tkrzw.DBM()
        start = time.monotonic()
        status = refused.Open(path, False, no_wait=True)
        assert not status.IsOK() and time.monotonic() - start < 2
        waiting = tkrzw.DBM()
        assert waiting.Open(path, False).IsOK()
        assert time.monotonic() - start >= 0.5
        waiting.Close()
    finally:
        holder.wait(timeout=30)


def test_the_compat_layer_ignores_another_key_comparator_on_reopen_as_the_reference_does(tmp_path):
    path = str(tmp_path / "casket.tkt")
    db = tkrzw.DBM()
    assert db.Open(path, True, key_comparator="DecimalKeyComparator").IsOK()
    for key in ("10", "9", "100"):
        db.Set(key, "v")
    db.Close()
    reopened = tkrzw.DBM()
    assert reopened.Open(path, True, key_comparator="LexicalKeyComparator").IsOK()
    it = reopened.MakeIterator()
    it.First()
    assert it.GetKeyStr() == "9"  # still the file's decimal order
    reopened.Close()
    # kuradb's own API refuses it, naming the file's order.
    with pytest.raises(kuradb.InvalidArgumentError, match="decimal"):
        kuradb.DBM(path, True, key_comparator="LexicalKeyComparator")
