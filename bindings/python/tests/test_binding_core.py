"""What the binding core gives the Python layers: the reference's status
codes from error kinds, its parameters translated, Synchronize with
parameters."""
import pathlib

import kuradb
from kuradb.compat import tkrzw


def test_a_write_to_a_reader_is_a_read_only_error_and_a_precondition_status(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "r.tkh")
    with kuradb.DBM(path, True) as db:
        db[b"k"] = b"v"
    with kuradb.DBM(path, False) as db:
        try:
            db[b"x"] = b"y"
        except kuradb.ReadOnlyError as e:
            assert isinstance(e, kuradb.InfeasibleError)
            assert e.status_code == tkrzw.Status.PRECONDITION_ERROR
        else:
            raise AssertionError("a reader took a write")
    dbm = tkrzw.DBM()
    assert dbm.Open(path, False).IsOK()
    assert dbm.Set("x", "y").GetCode() == tkrzw.Status.PRECONDITION_ERROR
    dbm.Close()


def test_the_references_parameters_are_translated(tmp_path: pathlib.Path) -> None:
    got = kuradb._kuradb._reference_params(
        {"concurrent": True, "access_options": "padding:pagecache", "record_comp_mode": "RECORD_COMP_AES",
         "cipher_key": "k", "max_page_size": 10})
    assert got == {"access_options": "padding+pagecache", "cipher_key": "k", "max_page_size": "64"}
    dbm = tkrzw.DBM()
    status = dbm.Open(str(tmp_path / "c.tkh"), True, record_comp_mode="RECORD_COMP_RC4", cipher_key="k")
    assert status.GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR
    path = str(tmp_path / "p.tkh")
    assert dbm.Open(path, True, file="pos-para", block_size=512, access_options="padding:pagecache").IsOK()
    assert dbm.Set("a", "1").IsOK()
    assert dbm.Close().IsOK()


def test_a_rebuild_takes_the_running_tuning_of_a_hash(tmp_path: pathlib.Path) -> None:
    assert kuradb._kuradb._rebuild_params({"fbp_capacity": 5, "num_buckets": 9}) == {"num_buckets": "9"}
    assert kuradb._kuradb._compat_open_params("", {"num_buckets": 9}) == {"num_buckets": "9", "no_wait": "false"}
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "h.tkh"), True, num_buckets=10).IsOK()
    assert dbm.Rebuild(fbp_capacity=100, num_buckets=100).IsOK()
    assert dbm.Close().IsOK()


def test_synchronize_merges_and_reduces_a_skip_database(tmp_path: pathlib.Path) -> None:
    other = tkrzw.DBM()
    assert other.Open(str(tmp_path / "b.tks"), True).IsOK()
    other.Set("k", "from b")
    other.Set("only b", "1")
    assert other.Close().IsOK()
    dbm = tkrzw.DBM()
    assert dbm.Open(str(tmp_path / "a.tks"), True).IsOK()
    dbm.Set("k", "from a")
    assert dbm.Synchronize(False, merge=str(tmp_path / "b.tks"), reducer="ReduceToFirst").IsOK()
    assert dbm.Count() == 2
    assert dbm.GetStr("only b") == "1"
    assert dbm.Synchronize(False, speed="fast").GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR
    dbm.Close()


def test_utility_serializes_numbers_big_endian() -> None:
    assert tkrzw.Utility.SerializeInt(256) == b"\x00\x00\x00\x00\x00\x00\x01\x00"
    assert tkrzw.Utility.DeserializeInt(tkrzw.Utility.SerializeInt(-5)) == -5
    assert tkrzw.Utility.DeserializeInt(b"\xff") == 255
    assert tkrzw.Utility.DeserializeFloat(tkrzw.Utility.SerializeFloat(-2.25)) == -2.25
    assert tkrzw.Utility.DeserializeFloat(b"abc") != tkrzw.Utility.DeserializeFloat(b"abc")  # NaN


def test_the_current_references_python_edges(tmp_path: pathlib.Path) -> None:
    dbm = tkrzw.DBM()
    assert len(dbm) == 0
    assert dbm.Open(str(tmp_path / "e.tkh"), True).IsOK()
    assert dbm.Process(12, lambda k, v: 34, True).IsOK()
    assert dbm.GetStr("12") == "34"
    for key in ("a", "b", "c"):
        dbm.Set(key, key)
    adbm = tkrzw.AsyncDBM(dbm, 2)
    assert adbm.RemoveMulti("a", "b").Get().IsOK()
    assert adbm.RemoveMulti(["c"]).Get().IsOK()
    assert adbm.RemoveMulti("zz").Get().GetCode() == tkrzw.Status.NOT_FOUND_ERROR
    adbm.Destruct()
    assert len(dbm) == 1
    dbm.Close()
