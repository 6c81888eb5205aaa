"""The reference's remaining DBM methods: kuradb.DBM's Python forms, and
kuradb.compat.tkrzw against the reference's own module (one program run by
both must print the same)."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import threading
import time

import pytest

import kuradb

from test_compat_tkrzw import REFERENCE_PYTHON, _has_reference

PROGRAM = pathlib.Path(__file__).with_name("reference_api_program.py")


def run(python: str, module: str, directory: pathlib.Path) -> str:
    directory.mkdir()
    done = subprocess.run([python, str(PROGRAM), module, str(directory)], capture_output=True)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return done.stdout.decode("utf-8", "replace")


def test_program_runs_under_the_compat_module(tmp_path: pathlib.Path) -> None:
    out = run(sys.executable, "kuradb.compat.tkrzw", tmp_path / "ours")
    assert out.startswith("tkh SUCCESS") and "regex raises INVALID_ARGUMENT_ERROR" in out


@pytest.mark.skipif(not _has_reference(), reason="the reference's module (python3-tkrzw) is not installed")
def test_same_output_as_the_reference(tmp_path: pathlib.Path) -> None:
    ours = run(sys.executable, "kuradb.compat.tkrzw", tmp_path / "ours").splitlines()
    theirs = run(REFERENCE_PYTHON, "tkrzw", tmp_path / "reference").splitlines()
    for number, (a, b) in enumerate(zip(ours, theirs), 1):
        assert a == b, f"line {number}"
    assert len(ours) == len(theirs)


@pytest.fixture
def db(tmp_path: pathlib.Path):
    with kuradb.DBM(tmp_path / "casket.tkmb", True) as db:
        yield db


def test_the_get_forms(db: kuradb.DBM) -> None:
    assert db.set_and_get("a", "1") is None and db.set_and_get("a", "2") == b"1"
    assert db.set_and_get("a", "3", overwrite=False) == b"2" and db["a"] == b"2"
    assert db.remove_and_get("a") == b"2" and db.remove_and_get("a") is None
    assert db.compare_exchange_and_get("c", None, "x") == (True, None)
    assert db.compare_exchange_and_get("c", None, "y") == (False, b"x")
    assert db.compare_exchange_and_get("c", kuradb.ANY_DATA, kuradb.ANY_DATA) == (True, b"x")
    assert db.compare_exchange_and_get("c", kuradb.ANY_DATA, None) == (True, b"x") and "c" not in db
    with pytest.raises(TypeError):
        db.set_and_get(1, "x")


def test_process_first_and_the_queue(db: kuradb.DBM) -> None:
    assert db.process_first(lambda k, v: None) is False
    assert db.push_last("one", wtime=1.5) == (150_000_000).to_bytes(8, "big")
    db.push_last("two", wtime=1.5)
    assert db.process_first(lambda k, v: v + b"!") is True
    assert db.pop_first() == ((150_000_000).to_bytes(8, "big"), b"one!")
    assert db.pop_first()[1] == b"two" and db.pop_first() is None
    with pytest.raises(ValueError):
        db.pop_first(timeout=-1)


def test_a_waiting_pop_first_releases_the_gil_and_is_woken_by_push_last(db: kuradb.DBM) -> None:
    started = time.monotonic()
    assert db.pop_first(timeout=0.1) is None and time.monotonic() - started >= 0.1
    got = []
    waiter = threading.Thread(target=lambda: got.append(db.pop_first(timeout=30)))
    waiter.start()
    time.sleep(0.2)  # the waiter holds no GIL: this thread runs meanwhile
    db.push_last("wake")
    waiter.join(10)
    assert not waiter.is_alive() and got[0][1] == b"wake"


def test_search_and_the_exports(db: kuradb.DBM, tmp_path: pathlib.Path) -> None:
    for key in ["apple", "apricot", "grape"]:
        db[key] = "v"
    assert db.search("begin", "ap") == ["apple", "apricot"]
    assert db.search("begin", b"ap", 1) == [b"apple"]
    assert db.search("edit", "grap", 1) == ["grape"]
    with pytest.raises(kuradb.InvalidArgumentError, match="unknown search mode"):
        db.search("bogus", "x")
    db.export_to_flat_records(tmp_path / "x.flat")
    db.export_keys_as_lines(tmp_path / "keys.txt")
    assert (tmp_path / "keys.txt").read_bytes() == b"apple\napricot\ngrape\n"
    with kuradb.DBM(tmp_path / "other.tksh", True) as other:
        assert other.import_from_flat_records(tmp_path / "x.flat") == 3 and other["grape"] == b"v"
        (tmp_path / "bad.flat").write_bytes(b"\xff\x05abc")
        with pytest.raises(kuradb.BrokenDataError, match="damaged"):
            other.import_from_flat_records(tmp_path / "bad.flat")
