"""Authenticated encryption through the binding: ``cipher_key`` (str or bytes)
encrypts hash values and tree pages; a wrong or missing key is an error at
open; the compat module maps the reference's RECORD_COMP_AES to it and
refuses RC4."""

import pytest

import kuradb
from kuradb.compat import tkrzw


@pytest.mark.parametrize("name", ["casket.kh", "casket.kt"])
def test_cipher_key_encrypts_and_a_wrong_or_missing_key_fails(tmp_path, name):
    path = str(tmp_path / name)
    db = kuradb.DBM(path, True, cipher_key="s3cret passphrase")
    db.set(b"japan", b"tokyo-tokyo")
    db.close()
    with open(path, "rb") as f:
        assert b"tokyo-tokyo" not in f.read()
    db = kuradb.DBM(path, False, cipher_key=b"s3cret passphrase")
    assert db.get(b"japan") == b"tokyo-tokyo"
    db.close()
    with pytest.raises(kuradb.Error, match="wrong cipher_key"):
        kuradb.DBM(path, False, cipher_key="other")
    with pytest.raises(kuradb.Error, match="is encrypted: give cipher_key"):
        kuradb.DBM(path, False)


@pytest.mark.parametrize("name", ["casket.kh", "casket.kt"])
def test_keys_are_sealed_in_the_file_and_read_back_in_clear(tmp_path, name):
    # Hash keys are sealed with AES-256-SIV, tree keys inside their sealed
    # pages: neither appears in the file, yet lookups, iteration and
    # removal see the caller's keys.
    path = str(tmp_path / name)
    keys = [b"sealed-key-%04d" % i for i in range(50)]
    db = kuradb.DBM(path, True, cipher_key="s3cret passphrase")
    for key in keys:
        db.set(key, b"v")
    db.remove(keys[0])
    db.close()
    with open(path, "rb") as f:
        content = f.read()
    assert b"sealed-key-" not in content
    db = kuradb.DBM(path, False, cipher_key="s3cret passphrase")
    assert sorted(k for k, _ in db.items()) == keys[1:]
    assert db.get(keys[1]) == b"v"
    assert db.get(keys[0]) is None
    assert len(db) == len(keys) - 1
    db.close()


def test_a_rebuild_changes_the_key(tmp_path):
    path = str(tmp_path / "casket.kh")
    db = kuradb.DBM(path, True, cipher_key="one")
    db.set(b"k", b"v")
    db.rebuild(cipher_key="two")
    db.close()
    db = kuradb.DBM(path, False, cipher_key="two")
    assert db.get(b"k") == b"v"
    db.close()


def test_compat_maps_aes_to_the_aead_and_refuses_rc4(tmp_path):
    path = str(tmp_path / "casket.tkh")
    dbm = tkrzw.DBM()
    status = dbm.Open(path, True, record_comp_mode="RECORD_COMP_AES", cipher_key="key")
    assert status.IsOK(), status
    assert dbm.Set("japan", "tokyo-tokyo").IsOK()
    assert dbm.Close().IsOK()
    with open(path, "rb") as f:
        assert b"tokyo-tokyo" not in f.read()
    status = dbm.Open(path, False, cipher_key="wrong")
    assert status.GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR
    assert "wrong cipher_key" in status.GetMessage()
    status = dbm.Open(path, False, cipher_key="key")
    assert status.IsOK(), status
    assert dbm.GetStr("japan") == "tokyo-tokyo"
    assert dbm.Close().IsOK()
    status = dbm.Open(str(tmp_path / "rc4.tkh"), True, record_comp_mode="RECORD_COMP_RC4", cipher_key="key")
    assert status.GetCode() == tkrzw.Status.INVALID_ARGUMENT_ERROR
    assert "RC4 is a broken cipher" in status.GetMessage()
    status = dbm.Open(str(tmp_path / "aes.tkh"), True, record_comp_mode="RECORD_COMP_AES")
    assert "needs a cipher_key" in status.GetMessage()
