"""Redis Sentinel (Debian's `redis-sentinel`) watching `kura serve`: one
master and two replicas, three sentinels, a client through redis-py's
`Sentinel`. The master is killed; a replica must be promoted, the other
must follow it, the client must go on writing, every write acknowledged by
`WAIT 1` before the kill must be on the new master, and the old master,
restarted as a master as an operator would, must be turned into a replica
of the new one and catch up (docs/serve.md, "Sentinel").

Needs the `kura` binary (KURA_BIN, else target/debug/kura), the `redis`
package and `redis-sentinel`; skips, saying which is missing, without them.
Every wait is bounded."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

redis = pytest.importorskip("redis", reason="the Python redis package is not installed")
from redis.sentinel import Sentinel  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
KURA = os.environ.get("KURA_BIN", os.path.join(ROOT, "target", "debug", "kura"))
TIMEOUT = 30
NAME = "mymaster"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, done, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            if done():
                return
        except (redis.exceptions.RedisError, OSError) as e:
            last = e
        time.sleep(0.1)
    raise AssertionError(f"waited {timeout} s in vain for {what} (last error: {last})")


def info(port, section="replication"):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5).info(section)


class Cluster:
    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = {}

    def start_kura(self, name, port, master_port=None):
        args = [
            KURA, "serve", os.path.join(self.tmp, f"{name}.tkh"),
            "--ulog", os.path.join(self.tmp, f"{name}-ulog"),
            "--address", f"127.0.0.1:{port}",
            "--log_level", "warn",
            "--log_file", os.path.join(self.tmp, f"{name}.log"),
        ]
        if master_port is not None:
            args += ["--replicaof", f"127.0.0.1:{master_port}"]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = proc.stdout.readline().strip()
        assert line == f"listening on 127.0.0.1:{port}", line
        self.procs[name] = proc
        return proc

    def start_sentinel(self, index, port, master_port):
        config = os.path.join(self.tmp, f"sentinel{index}.conf")
        with open(config, "w") as f:
            f.write(
                f"port {port}\nbind 127.0.0.1\ndaemonize no\ndir {self.tmp}\n"
                f'logfile "{os.path.join(self.tmp, f"sentinel{index}.log")}"\n'
                f"sentinel monitor {NAME} 127.0.0.1 {master_port} 2\n"
                f"sentinel down-after-milliseconds {NAME} 1000\n"
                f"sentinel failover-timeout {NAME} 6000\n"
                f"sentinel parallel-syncs {NAME} 2\n"
            )
        self.procs[f"sentinel{index}"] = subprocess.Popen(["redis-sentinel", config], stdout=subprocess.DEVNULL)

    def stop(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def cluster(request):
    if shutil.which("redis-sentinel") is None:
        pytest.skip("redis-sentinel is not installed (apt-get install redis-sentinel)")
    if not os.path.exists(KURA):
        pytest.skip(f"no kura binary at {KURA}: build it (cargo build -p kura-cli) or set KURA_BIN")
    failed_before = request.session.testsfailed
    with tempfile.TemporaryDirectory() as tmp:
        c = Cluster(tmp)
        try:
            yield c
        finally:
            c.stop()
            if request.session.testsfailed > failed_before:
                # The servers' and sentinels' logs say what went wrong.
                for name in sorted(os.listdir(tmp)):
                    if name.endswith(".log"):
                        text = open(os.path.join(tmp, name), errors="replace").read()
                        print(f"== {name}\n{text[-4000:]}")


def follows(port, master_port):
    """Whether the server at `port` replicates `master_port` over a live link."""
    i = info(port)
    return i["role"] == "slave" and i["master_port"] == master_port and i["master_link_status"] == "up"


def acknowledged_write(client, key, value):
    pipe = client.pipeline(transaction=False)
    pipe.set(key, value)
    pipe.execute_command("WAIT", 1, 2000)
    stored, replicas = pipe.execute()
    return stored and replicas >= 1


def test_sentinel_fails_over_and_the_old_master_rejoins_as_a_replica(cluster):
    ports = {name: free_port() for name in ("a", "b", "c")}
    cluster.start_kura("a", ports["a"])
    cluster.start_kura("b", ports["b"], ports["a"])
    cluster.start_kura("c", ports["c"], ports["a"])
    sentinel_ports = [free_port() for _ in range(3)]
    for i, port in enumerate(sentinel_ports):
        cluster.start_sentinel(i, port, ports["a"])

    def sentinels_see_everyone():
        for port in sentinel_ports:
            state = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5).sentinel_master(NAME)
            if state["num-slaves"] != 2 or state["num-other-sentinels"] != 2:
                return False
        return True

    wait_for("each sentinel to see both replicas and the other sentinels", sentinels_see_everyone)

    sentinel = Sentinel([("127.0.0.1", p) for p in sentinel_ports], socket_timeout=2)
    client = sentinel.master_for(NAME, socket_timeout=2)
    acknowledged = {}
    for i in range(200):
        if acknowledged_write(client, f"key{i}", f"value{i}"):
            acknowledged[f"key{i}"] = f"value{i}".encode()
    assert len(acknowledged) == 200, "every write is acknowledged while both replicas run"

    cluster.procs["a"].send_signal(signal.SIGKILL)
    cluster.procs["a"].wait()
    killed_at = time.monotonic()

    # The client goes on writing through Sentinel once a replica is promoted.
    written_after = {}

    def write_through_sentinel():
        i = len(written_after)
        client.set(f"after{i}", f"late{i}")
        written_after[f"after{i}"] = f"late{i}".encode()
        return len(written_after) >= 20

    wait_for("writes through Sentinel to succeed after the failover", write_through_sentinel)
    failover_took = time.monotonic() - killed_at
    first_port = sentinel.discover_master(NAME)[1]

    # On a loaded machine a sentinel may find the promoted replica slow for
    # down-after-milliseconds and fail over a second time; a careful client
    # follows whichever master Sentinel names, so the test does too.
    settled = {}

    def replicas_follow_the_named_master():
        host, port = sentinel.discover_master(NAME)
        assert host == "127.0.0.1" and port in (ports["b"], ports["c"]), (host, port)
        other = "c" if port == ports["b"] else "b"
        if info(port)["role"] != "master" or not follows(ports[other], port):
            return False
        settled["port"] = port
        return True

    wait_for("the other replica to follow the promoted one", replicas_follow_the_named_master)
    new_port = settled["port"]
    promoted = redis.Redis(host="127.0.0.1", port=new_port, socket_timeout=5)
    for key, value in acknowledged.items():
        assert promoted.get(key) == value, f"{key}, acknowledged by WAIT 1 before the kill, is lost"
    if new_port == first_port:
        for key, value in written_after.items():
            assert promoted.get(key) == value
    else:
        # Writes no replica acknowledged may be lost in a second failover,
        # as with Redis itself; those acknowledged from here on may not.
        print(f"Sentinel failed over twice: {first_port}, then {new_port}")
        written_after.clear()
    for i in range(20):
        # A connection the client opened to the master before the second
        # failover fails once; redis-py then asks Sentinel again.
        wait_for(f"settled{i} to be acknowledged by the other replica",
                 lambda: acknowledged_write(client, f"settled{i}", f"value{i}"))
        written_after[f"settled{i}"] = f"value{i}".encode()
    for key, value in written_after.items():
        assert promoted.get(key) == value

    # The old master comes back as a master, as an operator restarting it
    # would start it; Sentinel turns it into a replica of the new master.
    cluster.start_kura("a", ports["a"])

    wait_for("Sentinel to make the old master a replica of the new one", lambda: follows(ports["a"], new_port))
    wait_for("a write through Sentinel", lambda: client.set("last", "write"))
    old = redis.Redis(host="127.0.0.1", port=ports["a"], socket_timeout=5)
    wait_for("the old master to converge", lambda: old.get("last") == b"write")
    assert old.dbsize() == promoted.dbsize()
    for key, value in list(acknowledged.items())[::20] + list(written_after.items()):
        assert old.get(key) == value
    with pytest.raises(redis.exceptions.ReadOnlyError):
        old.set("k", "v")
    print(f"failover in {failover_took:.1f} s")
