"""kuradb.compat.tkrzw against the reference's own module: one program run
by both must print the same."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from kuradb.compat import tkrzw

PROGRAM = pathlib.Path(__file__).with_name("compat_program.py")
REFERENCE_PYTHON = os.environ.get("KURADB_REFERENCE_PYTHON", "/usr/bin/python3")


def run(python: str, module: str, directory: pathlib.Path) -> str:
    directory.mkdir()
    done = subprocess.run([python, str(PROGRAM), module, str(directory)], capture_output=True, check=True)
    return done.stdout.decode("utf-8", "replace")


def test_program_runs(tmp_path: pathlib.Path) -> None:
    out = run(sys.executable, "kuradb.compat.tkrzw", tmp_path / "ours")
    assert out.startswith("tkh SUCCESS") and "OrDie NOT_FOUND_ERROR: x" in out


def _has_reference() -> bool:
    if not os.path.exists(REFERENCE_PYTHON):
        return False
    return subprocess.run([REFERENCE_PYTHON, "-c", "import tkrzw"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _has_reference(), reason="the reference's module (python3-tkrzw) is not installed")
def test_same_output_as_the_reference(tmp_path: pathlib.Path) -> None:
    assert run(sys.executable, "kuradb.compat.tkrzw", tmp_path / "ours") == run(
        REFERENCE_PYTHON, "tkrzw", tmp_path / "reference"
    )


def test_status() -> None:
    status = tkrzw.Status(tkrzw.Status.NOT_FOUND_ERROR, "gone")
    assert not status.IsOK() and status == 7 and status.GetMessage() == "gone"
    assert str(status) == "NOT_FOUND_ERROR: gone" and repr(status) == "<tkrzw.Status: NOT_FOUND_ERROR: gone>"
    with pytest.raises(tkrzw.StatusException) as raised:
        status.OrDie()
    assert raised.value.GetStatus() == status and isinstance(raised.value, RuntimeError)
    status.Join(tkrzw.Status(2))
    assert status == tkrzw.Status.NOT_FOUND_ERROR
    ok = tkrzw.Status()
    ok.Join(tkrzw.Status(2, "sys"))
    assert ok.GetCode() == tkrzw.Status.SYSTEM_ERROR
    tkrzw.Status().OrDie()


def test_parameters_and_errors(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    status = dbm.Open(str(tmp_path / "a.tkh"), True, bogus=1)
    assert status == tkrzw.Status.INVALID_ARGUMENT_ERROR and "bogus" in status.GetMessage()
    assert dbm.Open(str(tmp_path / "a.tkt"), True, dbm="TreeDBM", file="PositionalParallelFile",
                    concurrent=True, update_mode="UPDATE_IN_PLACE", fbp_capacity=64,
                    key_comparator="RealNumberKeyComparator").IsOK()
    assert dbm.Inspect()["key_comparator"] == "real"
    # As the reference's: opening an open DBM raises.
    with pytest.raises(TypeError, match="opened database"):
        dbm.Open(str(tmp_path / "b.tkt"), True)
    assert dbm.Set("1.5", "x").IsOK() and dbm.Set("10", "y").IsOK() and dbm.Set("2", "z").IsOK()
    it = dbm.MakeIterator()
    it.First()
    assert [it.Step()[0] for _ in range(3)] == [b"1.5", b"2", b"10"] and it.Step() is None
    assert str(dbm).startswith("TreeDBM:") and "num_records=3" in repr(dbm)
    status = tkrzw.Status()
    # As the reference: "z" counts as 0x7a; the sum is stored as 8 bytes.
    assert dbm.Increment("2", 1, 0, status) == 0x7B and status.IsOK()
    assert dbm.Get("2") == (0x7B).to_bytes(8, "big")
    assert dbm.Increment("2", 1, 0, status) == 0x7C
    dbm.Set("long", b"\x00" * 7 + b"\x01tail")
    assert dbm.Increment("long", -(2**63), 0, status) == 1 and dbm.Get("long") == b"\x00" * 7 + b"\x01tail"
    assert dbm.Remove("long").IsOK()
    other = tkrzw.DBM()
    other.Open(str(tmp_path / "c.tkh"), True).OrDie()
    assert dbm.Export(other).IsOK() and other.Count() == 3
    assert dbm.CopyFileData(str(tmp_path / "copy.tkt")).IsOK()
    assert other.Close().IsOK() and dbm.Close().IsOK()
    with pytest.raises(TypeError):
        dbm.Get("x")


def test_record_comp_mode_takes_the_reference_names(tmp_path: pathlib.Path) -> None:
    """The compat module passes record_comp_mode in the reference's spelling."""
    path = str(tmp_path / "casket.tkh")
    dbm = tkrzw.DBM()
    assert dbm.Open(path, True, record_comp_mode="RECORD_COMP_ZSTD", num_buckets=100).IsOK()
    value = "tokyo, japan; " * 50
    assert dbm.Set("one", value).IsOK()
    assert dbm.Inspect()["record_comp_mode"] == "zstd"
    assert dbm.Close().IsOK()
    assert os.path.getsize(path) < len(value) + 4096
    dbm = tkrzw.DBM()
    assert dbm.Open(path, False).IsOK()
    assert dbm.GetStr("one") == value
    assert dbm.Close().IsOK()


def test_process_multi_and_read_only_processes(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "multi.tkt"), True) == tkrzw.Status.SUCCESS
    dbm.Set("a", "1")
    dbm.Set("b", "2")
    seen = []

    def answer(new: object) -> object:
        def call(key: bytes, value: object) -> object:
            seen.append((key, value))
            return new

        return call

    pairs = [("a", answer(False)), ("b", answer("two")), ("c", answer(3))]
    # Read-only, the answers are ignored, as the reference ignores them.
    assert dbm.ProcessMulti(pairs, False) == tkrzw.Status.SUCCESS
    assert dbm.GetMultiStr("a", "b", "c") == {"a": "1", "b": "2"}
    assert dbm.Process("a", lambda k, v: "x", False) == tkrzw.Status.SUCCESS
    assert dbm.ProcessEach(lambda k, v: False, False) == tkrzw.Status.SUCCESS
    assert dbm.Count() == 2
    assert dbm.ProcessMulti(pairs, True) == tkrzw.Status.SUCCESS
    assert dbm.GetMultiStr("a", "b", "c") == {"b": "two", "c": "3"}
    assert seen[:3] == [(b"a", b"1"), (b"b", b"2"), (b"c", None)]
    assert dbm.Close() == tkrzw.Status.SUCCESS


@pytest.mark.parametrize(
    "name, open_params, rebuild_params, figures",
    [
        (
            "casket.tks",
            {"offset_width": 3, "step_unit": 2, "max_level": 3, "sort_mem_size": 100, "max_cached_records": 8},
            {"offset_width": 4, "step_unit": 3, "max_level": 5, "sort_mem_size": 200, "max_cached_records": 4},
            {"offset_width": "4", "step_unit": "3", "max_level": "5"},
        ),
        ("casket.tiny", {"num_buckets": 10}, {"num_buckets": 5000}, {}),
        ("casket.cache", {"cap_rec_num": 100, "cap_mem_size": 1000000}, {"cap_rec_num": 5}, {"cap_rec_num": "5"}),
        ("casket.stdhash", {"num_buckets": 10}, {"num_buckets": 100}, {}),
    ],
)
def test_a_rebuild_takes_the_references_tuning_of_each_class(
    tmp_path: pathlib.Path, name: str, open_params: dict, rebuild_params: dict, figures: dict
) -> None:
    """The reference's own tests rebuild each class with its tuning; so do these."""
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / name), True, truncate=True, **open_params).IsOK()
    for i in range(20):
        assert dbm.Set("%08d" % i, str(i)).IsOK()
    assert dbm.Synchronize(False).IsOK()
    assert dbm.Rebuild(**rebuild_params).IsOK()
    inspect = dbm.Inspect()
    for figure, value in figures.items():
        assert inspect[figure] == value, inspect
    # A cache rebuilt with fewer records than it holds evicts the oldest.
    kept = min(20, rebuild_params.get("cap_rec_num", 20))
    assert dbm.Count() == kept
    assert dbm.GetStr("%08d" % 19) == "19"
    # No skip list has level 0, and no other class has levels.
    status = dbm.Rebuild(max_level=0)
    assert status.GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR, status
    assert dbm.Close().IsOK()
