"""Expiry through the Python `redis` client's own calls: `set(ex=, px=,
nx=, keepttl=)`, `expire`, `ttl`, `pttl`, `persist`, `getex`,
`expiretime` and a transactional pipeline, against one `kura serve`
process.

Needs the `kura` binary (KURA_BIN, else target/debug/kura) and the `redis`
package; skips, saying which is missing, without them. Every wait is
bounded."""

import time

import pytest

redis = pytest.importorskip("redis", reason="the Python redis package is not installed")

from kura_process import TIMEOUT, serving


@pytest.fixture
def server(tmp_path):
    with serving(str(tmp_path / "expiry.tkh")) as port:
        yield redis.Redis(host="127.0.0.1", port=port, socket_timeout=TIMEOUT)


def test_set_options_ttl_and_persist(server):
    r = server
    assert r.set("a", "1", ex=100)
    assert r.ttl("a") == 100
    assert 99000 <= r.pttl("a") <= 100000
    assert r.set("b", "2", px=50000)
    assert r.set("b", "3", nx=True) is None
    assert r.set("b", "4", keepttl=True)
    assert 0 < r.ttl("b") <= 50
    assert r.get("b") == b"4"
    assert r.set("b", "5")
    assert r.ttl("b") == -1
    assert r.ttl("missing") == -2
    assert r.expire("b", 30)
    assert not r.expire("b", 10, gt=True)
    assert r.expire("b", 10, lt=True)
    assert r.ttl("b") == 10
    assert r.persist("b")
    assert r.ttl("b") == -1
    with pytest.raises(redis.ResponseError, match="invalid expire time in 'set' command"):
        r.set("a", "1", ex=0)


def test_getex_expiretime_and_expiry(server):
    r = server
    r.set("k", "v")
    assert r.getex("k", ex=60) == b"v"
    assert r.ttl("k") == 60
    assert abs(r.expiretime("k") - (int(time.time()) + 60)) <= 1
    assert r.getex("k", persist=True) == b"v"
    assert r.ttl("k") == -1
    r.set("short", "v", px=100)
    deadline = time.monotonic() + TIMEOUT
    while r.exists("short") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert r.get("short") is None
    assert b"short" not in r.keys("*")


def test_a_transactional_pipeline_sets_expiries(server):
    r = server
    pipe = r.pipeline(transaction=True)
    pipe.set("t", "1", ex=100).ttl("t").incr("t").ttl("t").getex("t", px=5000)
    assert pipe.execute() == [True, 100, 2, 100, b"2"]
    assert 0 < r.pttl("t") <= 5000
