"""kuradb.UpdateLogReader: the entries of update-log files, from a timestamp,
waiting for new ones with the GIL released, and closing."""

from __future__ import annotations

import pathlib
import threading
import time

import pytest

import kuradb


def test_reads_every_entry_with_its_fields(tmp_path: pathlib.Path) -> None:
    prefix = tmp_path / "ulog"
    db = kuradb.DBM(tmp_path / "casket.tkh", True, ulog_prefix=str(prefix), ulog_server_id=3, ulog_dbm_index=5)
    db.set("japan", "tokyo")
    db.append("japan", "!", "")
    db.remove("china")
    db.clear()
    db.synchronize()
    with kuradb.UpdateLogReader(prefix) as reader:
        entries = list(reader)
        assert [(e.op, e.key, e.value) for e in entries] == [
            ("SET", b"japan", b"tokyo"),
            ("SET", b"japan", b"tokyo!"),
            ("REMOVE", b"china", None),
            ("CLEAR", None, None),
        ]
        assert {(e.server_id, e.dbm_index) for e in entries} == {(3, 5)}
        stamps = [e.timestamp for e in entries]
        assert stamps == sorted(stamps) and abs(stamps[0] / 1000 - time.time()) < 600
        assert "op='SET'" in repr(entries[0]) or 'op="SET"' in repr(entries[0])
        assert reader.read() is None
    # From a timestamp: the entries written before it are left out.
    later = kuradb.UpdateLogReader(prefix, timestamp=stamps[-1] + 1)
    assert later.read() is None
    db.set("later", "x")
    db.synchronize()
    entry = later.read()
    assert entry is not None and (entry.op, entry.key) == ("SET", b"later")
    later.close()
    with pytest.raises(kuradb.InfeasibleError, match="closed"):
        later.read()
    db.close()


def test_a_waiting_read_releases_the_gil_and_sees_a_new_entry(tmp_path: pathlib.Path) -> None:
    prefix = tmp_path / "ulog"
    db = kuradb.DBM(tmp_path / "casket.tkh", True, ulog_prefix=str(prefix))
    reader = kuradb.UpdateLogReader(prefix)
    ticks = []

    def writer() -> None:
        # Runs Python code while the reader waits: it could not if the wait held the GIL.
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:
            ticks.append(1)
            time.sleep(0.01)
        db.set("news", "here")

    thread = threading.Thread(target=writer)
    start = time.monotonic()
    thread.start()
    entry = reader.read(timeout=30)
    waited = time.monotonic() - start
    thread.join()
    assert entry is not None and (entry.key, entry.value) == (b"news", b"here")
    assert len(ticks) > 5 and 0.25 < waited < 20
    # Nothing more: a short timeout answers None after about that long.
    start = time.monotonic()
    assert reader.read(timeout=0.2) is None
    assert time.monotonic() - start >= 0.19
    with pytest.raises(ValueError, match="timeout"):
        reader.read(timeout=-1)
    reader.close()
    db.close()


def test_a_damaged_entry_is_a_broken_data_error(tmp_path: pathlib.Path) -> None:
    prefix = tmp_path / "ulog"
    db = kuradb.DBM(tmp_path / "casket.tkh", True, ulog_prefix=str(prefix))
    db.set("k", "value")
    db.close()
    path = tmp_path / "ulog.0000000000"
    data = bytearray(path.read_bytes())
    data[32 + 11 + 5] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(kuradb.BrokenDataError, match="checksum"):
        kuradb.UpdateLogReader(prefix).read()
