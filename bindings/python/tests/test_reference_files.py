"""kuradb.DBM(path) on files the reference implementation (Tkrzw) wrote:
opened read-only, every record readable, writes refused with a hint. Built
with Debian's tkrzw-utils; skipped where it is not installed."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

import kuradb

pytestmark = pytest.mark.skipif(
    shutil.which("tkrzw_dbm_util") is None, reason="tkrzw_dbm_util (Debian tkrzw-utils) is not installed"
)


def util(*args: str) -> None:
    subprocess.run(["tkrzw_dbm_util", *args], check=True, capture_output=True)


@pytest.mark.parametrize("cls,ext", [("hash", "tkh"), ("tree", "tkt"), ("skip", "tks"), ("baby", "tkmb")])
def test_a_reference_file_opens_read_only(tmp_path: pathlib.Path, cls: str, ext: str) -> None:
    path = tmp_path / f"casket.{ext}"
    util("create", "--dbm", cls, str(path))
    for i in range(20):
        util("set", "--dbm", cls, str(path), f"key{i:02d}", f"value{i}")
    util("remove", "--dbm", cls, str(path), "key05")
    db = kuradb.DBM(path)
    try:
        assert len(db) == 19
        assert db.get("key07") == b"value7" and db.get("key05") is None
        assert {bytes(k) for k in db.keys()} == {f"key{i:02d}".encode() for i in range(20) if i != 5}
        assert db.inspect()["read_only_reference_file"] == "true"
        with pytest.raises(kuradb.InfeasibleError, match="kura util convert"):
            db.set("key07", "changed")
        assert db.get("key07") == b"value7"
    finally:
        db.close()
    with pytest.raises(kuradb.InfeasibleError, match="opened read-only"):
        kuradb.DBM(path, True)
