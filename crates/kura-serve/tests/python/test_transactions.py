"""MULTI/EXEC and WATCH through the Python `redis` client's own
transactions: `pipeline(transaction=True)` and `watch`, against one
`kura serve` process.

Needs the `kura` binary (KURA_BIN, else target/debug/kura) and the `redis`
package; skips, saying which is missing, without them. Every wait is
bounded."""

import threading

import pytest

redis = pytest.importorskip("redis", reason="the Python redis package is not installed")

from kura_process import TIMEOUT, serving


@pytest.fixture
def server(tmp_path):
    with serving(str(tmp_path / "tx.kh"), "#dbm=baby") as port:
        yield port


def connect(port, db=0):
    return redis.Redis(host="127.0.0.1", port=port, db=db, socket_timeout=TIMEOUT)


def test_a_transactional_pipeline_answers_every_reply(server):
    r = connect(server)
    r.set("text", "abc")
    pipe = r.pipeline(transaction=True)
    pipe.set("a", "1").incr("a").get("a").incr("text")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        pipe.execute()
    # The runtime error did not roll the rest back, as in Redis.
    assert r.get("a") == b"2"
    pipe = r.pipeline(transaction=True)
    pipe.set("b", "x").append("b", "y").get("b")
    assert pipe.execute() == [True, 2, b"xy"]


def test_a_queue_time_error_discards_the_block(server):
    r = connect(server)
    pipe = r.pipeline(transaction=True)
    pipe.set("c", "1").execute_command("NOSUCHCOMMAND", "x")
    with pytest.raises(redis.ResponseError):
        pipe.execute()
    assert r.get("c") is None


def test_a_watched_key_changed_by_another_client_raises_watch_error(server):
    r, other = connect(server), connect(server)
    r.set("balance", "10")
    with r.pipeline() as pipe:
        pipe.watch("balance")
        balance = int(pipe.get("balance"))
        other.set("balance", "0")
        pipe.multi()
        pipe.set("balance", balance - 3)
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert r.get("balance") == b"0"
    # Unchanged: the check-and-set goes through.
    with r.pipeline() as pipe:
        pipe.watch("balance")
        balance = int(pipe.get("balance"))
        pipe.multi()
        pipe.set("balance", balance + 5)
        assert pipe.execute() == [True]
    assert r.get("balance") == b"5"


def test_concurrent_check_and_set_loses_no_update(server):
    connect(server).set("counter", "0")

    def add(times):
        r = connect(server)
        for _ in range(times):

            def step(pipe):
                value = int(pipe.get("counter"))
                pipe.multi()
                pipe.set("counter", value + 1)

            r.transaction(step, "counter")

    threads = [threading.Thread(target=add, args=(50,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert connect(server).get("counter") == b"150"


def test_transactions_on_another_database(server):
    r = connect(server, db=1)
    pipe = r.pipeline(transaction=True)
    pipe.set("k", "v").get("k")
    assert pipe.execute() == [True, b"v"]
    assert connect(server).get("k") is None
