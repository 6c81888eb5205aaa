"""DBM.set_arrow and kuradb.shard_of_arrow: whole pyarrow columns in one call."""

import pytest

import kuradb

pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed; the Arrow column calls are not tested")


def test_set_arrow_writes_every_row_of_every_layout(tmp_path):
    with kuradb.DBM(str(tmp_path / "a.kt"), True) as db:
        assert db.set_arrow(pa.array(["a", "b"]), pa.array([b"1", b""], pa.binary())) == 2
        # Sliced arrays share their buffers: the offset must be honoured.
        keys = pa.array(["skip", "c", "d"], pa.large_string()).slice(1)
        values = pa.array([b"x", b"3", b"4"], pa.large_binary()).slice(1)
        assert db.set_arrow(keys, values) == 2
        # A later row of a key wins.
        db.set_arrow(pa.array([b"e", b"e"]), pa.array(["first", "last"]))
        assert dict(db.items()) == {b"a": b"1", b"b": b"", b"c": b"3", b"d": b"4", b"e": b"last"}
        assert db.set_arrow(pa.array([], pa.binary()), pa.array([], pa.binary())) == 0


def test_set_arrow_refuses_nulls_types_and_lengths_naming_them(tmp_path):
    with kuradb.DBM(str(tmp_path / "a.kh"), True) as db:
        with pytest.raises(ValueError, match="value column has a null at row 2"):
            db.set_arrow(pa.array(["a", "b", "c"]), pa.array(["x", "y", None]))
        with pytest.raises(ValueError, match="key column has a null at row 0"):
            db.set_arrow(pa.array([None, "b"]), pa.array(["x", "y"]))
        with pytest.raises(TypeError, match="key column is of Arrow type int64"):
            db.set_arrow(pa.array([1, 2]), pa.array(["x", "y"]))
        with pytest.raises(TypeError, match="must be a pyarrow Array"):
            db.set_arrow([b"a"], [b"b"])
        with pytest.raises(ValueError, match="1 rows but the value column 2"):
            db.set_arrow(pa.array(["a"]), pa.array(["x", "y"]))
        assert len(db) == 0


def test_shard_of_arrow_routes_as_shard_of():
    keys = [f"key-{i}".encode() for i in range(2000)] + [b""]
    for n in (1, 3, 16):
        ids = kuradb.shard_of_arrow(pa.array(keys, pa.binary()), n)
        assert ids.type == pa.int32()
        assert ids.to_pylist() == [kuradb.shard_of(k, n) for k in keys]
    sliced = pa.array([k.decode() for k in keys]).slice(5, 10)
    assert kuradb.shard_of_arrow(sliced, 7).to_pylist() == [kuradb.shard_of(k, 7) for k in keys[5:15]]
    with pytest.raises(kuradb.InvalidArgumentError, match="number of shards"):
        kuradb.shard_of_arrow(pa.array([b"a"]), 0)


def test_next_columns_gives_whole_batches_of_records_as_arrow_buffers(tmp_path):
    with kuradb.DBM(tmp_path / "c.tkt", True) as db:
        for i in range(25):
            db[f"k{i:02d}"] = "v" * i
        records = iter(db.items())
        batches = []
        while (columns := records.next_columns(10)) is not None:
            count, key_offsets, keys, value_offsets, values = columns
            key_array = pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(key_offsets), pa.py_buffer(keys)])
            value_array = pa.Array.from_buffers(
                pa.binary(), count, [None, pa.py_buffer(value_offsets), pa.py_buffer(values)]
            )
            batches.append(list(zip(key_array.to_pylist(), value_array.to_pylist())))
        assert [len(b) for b in batches] == [10, 10, 5]
        assert [pair for batch in batches for pair in batch] == list(db.items())
        # A range's end bounds the batches too.
        ranged = iter(db.range("k05", "k08"))
        count, *_ = ranged.next_columns(100)
        assert count == 3 and ranged.next_columns(100) is None
        with pytest.raises(ValueError, match="max_records"):
            iter(db.items()).next_columns(0)
