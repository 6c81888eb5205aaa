"""kuradb.Index (Python style) and kuradb.compat.tkrzw.Index (the
reference's names), the latter run by one program under both modules."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import threading

import pytest

import kuradb

PROGRAM = pathlib.Path(__file__).with_name("index_program.py")
REFERENCE_PYTHON = os.environ.get("KURADB_REFERENCE_PYTHON", "/usr/bin/python3")


def test_python_style(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "city.kti")
    with kuradb.Index(path, True, truncate=True) as index:
        index.add("tokyo", "u17")
        index.add(b"tokyo", b"u3")
        index.add("osaka", "u8")
        index.add("tokyo", "u3")
        assert len(index) == 3 and ("tokyo", "u3") in index and ("tokyo", "u4") not in index
        assert index.get_values("tokyo") == [b"u17", b"u3"] and index.get_values("tokyo", 1) == [b"u17"]
        assert list(index) == [(b"osaka", b"u8"), (b"tokyo", b"u17"), (b"tokyo", b"u3")]
        index.remove("osaka", "u8")
        with pytest.raises(KeyError):
            index.remove("osaka", "u8")
        assert index.discard("tokyo", "u17") and not index.discard("tokyo", "u17")
        assert index.is_writable() and not index.is_in_memory() and index.path() == path
    assert not index.is_open()
    with pytest.raises(kuradb.InfeasibleError):
        len(index)
    with kuradb.Index(path, False) as reader:
        assert list(reader) == [(b"tokyo", b"u3")] and not reader.is_writable()
        with pytest.raises(kuradb.Error):
            reader.add("kyoto", "u9")


def test_iterator_moves_and_survives_changes() -> None:
    index = kuradb.Index()
    assert index.is_in_memory()
    for k, v in [("a", "1"), ("a", "2"), ("b", "1"), ("c", "1")]:
        index.add(k, v)
    it = index.make_iterator()
    assert it.get() is None
    it.next()
    assert it.get() is None, "an iterator nowhere stays nowhere"
    it.jump("a", "2")
    assert it.get() == (b"a", b"2")
    index.remove("a", "2")
    assert it.get() == (b"b", b"1"), "a removed pair's place goes to the next"
    it.previous()
    assert it.get() == (b"a", b"1")
    it.last()
    it.next()
    assert it.get() is None
    it.jump("b")
    assert list(it) == [(b"b", b"1"), (b"c", b"1")]
    index.close()
    with pytest.raises(kuradb.InfeasibleError):
        it.first()


def test_bad_input_is_refused_by_name(tmp_path: pathlib.Path) -> None:
    with pytest.raises(kuradb.InvalidArgumentError, match="pair comparator"):
        kuradb.Index(str(tmp_path / "a.kti"), True, key_comparator="DecimalKeyComparator")
    with pytest.raises(kuradb.InvalidArgumentError, match="bogus"):
        kuradb.Index("", True, bogus=1)
    with pytest.raises(TypeError):
        kuradb.Index().add(1, "x")
    plain = str(tmp_path / "plain.kt")
    kuradb.DBM(plain, True).close()
    with pytest.raises(kuradb.InvalidArgumentError, match="not an index"):
        kuradb.Index(plain, True)


def test_threads_add_together() -> None:
    index = kuradb.Index()

    def add(t: int) -> None:
        for i in range(500):
            index.add(str(i % 10), f"{t}-{i}")

    threads = [threading.Thread(target=add, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(index) == 2000 and len(index.get_values("3")) == 200


def run(python: str, module: str, directory: pathlib.Path) -> str:
    directory.mkdir()
    done = subprocess.run([python, str(PROGRAM), module, str(directory)], capture_output=True, check=True)
    return done.stdout.decode("utf-8", "replace")


def _reference_has_index() -> bool:
    if not os.path.exists(REFERENCE_PYTHON):
        return False
    probe = [REFERENCE_PYTHON, "-c", "import tkrzw; tkrzw.Index"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def test_compat_program_runs(tmp_path: pathlib.Path) -> None:
    out = run(sys.executable, "kuradb.compat.tkrzw", tmp_path / "ours").splitlines()
    assert out[0] == "False SUCCESS True True" and out[2].startswith("7 7 True False True"), out[:3]
    assert "[b'a', b'd'] ['a', 'd'] [b'a'] []" in out[3] and out[4] == "SUCCESS NOT_FOUND_ERROR 6"
    assert out[-1] == "TypeError"


@pytest.mark.skipif(not _reference_has_index(), reason="the reference's module has no Index (python3-tkrzw < 0.1.30?)")
def test_same_output_as_the_reference(tmp_path: pathlib.Path) -> None:
    assert run(sys.executable, "kuradb.compat.tkrzw", tmp_path / "ours") == run(
        REFERENCE_PYTHON, "tkrzw", tmp_path / "reference"
    )
