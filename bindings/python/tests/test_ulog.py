"""Update logs through params: kuradb.DBM(path, ulog_prefix=...) logs every
change, and DBM.apply_update_logs replays the files into another database."""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import kuradb


def test_ulog_prefix_logs_changes_that_apply_replays(tmp_path: pathlib.Path) -> None:
    prefix = tmp_path / "ulog"
    db = kuradb.DBM(tmp_path / "casket.tkh", True, ulog_prefix=str(prefix), ulog_server_id=3)
    db.set("japan", "tokyo")
    db.set("china", "beijing")
    db.append("japan", "!", "")
    db.increment("count", 2)
    db.remove("china")
    db.close()
    assert (tmp_path / "ulog.0000000000").exists()
    replica = kuradb.DBM(tmp_path / "replica.tkt", True)
    assert replica.apply_update_logs(prefix) == 5
    assert replica.apply_update_logs(prefix, server_id=4) == 0
    assert replica.get_str("japan") == "tokyo!" and replica.get("china") is None
    assert replica.get("count") == (2).to_bytes(8, "big") and len(replica) == 2
    replica.close()
    if shutil.which("tkrzw_ulog_util"):
        out = subprocess.run(
            ["tkrzw_ulog_util", "read", str(prefix)], check=True, capture_output=True, text=True
        ).stdout
        assert [line.split("\t")[1:4] for line in out.splitlines()][0] == ["3", "0", "SET"]
        assert out.splitlines()[2].endswith("\tSET\tjapan\ttokyo!")
