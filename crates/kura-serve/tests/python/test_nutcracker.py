"""The nutcracker set-up of deploy/nutcracker.yml: three `kura serve`
processes behind the proxy, used through the Python `redis` client.

Needs the `kura` binary (KURA_BIN, else target/debug/kura), the `redis`
package and the `nutcracker` command; skips, saying which is missing,
without them. Every wait is bounded."""

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import warnings

import pytest

redis = pytest.importorskip("redis", reason="the Python redis package is not installed")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
KURA = os.environ.get("KURA_BIN", os.path.join(ROOT, "target", "debug", "kura"))
CONFIG = os.path.join(ROOT, "deploy", "nutcracker.yml")
TIMEOUT = 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_kura(path):
    proc = subprocess.Popen(
        [KURA, "serve", path, "--address", "127.0.0.1:0", "--log_level", "warn"],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().strip()
    assert line.startswith("listening on "), line
    return proc, int(line.rsplit(":", 1)[1])


def wait_for_port(port):
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port} after {TIMEOUT} s")


@pytest.fixture
def cluster():
    if shutil.which("nutcracker") is None:
        pytest.skip("nutcracker is not installed (apt-get install nutcracker)")
    if not os.path.exists(KURA):
        pytest.skip(f"no kura binary at {KURA}: build it (cargo build -p kura-cli) or set KURA_BIN")
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            ports = []
            for i in range(3):
                proc, port = start_kura(os.path.join(tmp, f"shard{i + 1}.tkh"))
                procs.append(proc)
                ports.append(port)
            proxy_port = free_port()
            text = open(CONFIG).read()
            text = text.replace("listen: 127.0.0.1:6380", f"listen: 127.0.0.1:{proxy_port}")
            for i, port in enumerate(ports):
                text = re.sub(rf"127\.0\.0\.1:638{i + 1}:1", f"127.0.0.1:{port}:1", text)
            config = os.path.join(tmp, "nutcracker.yml")
            with open(config, "w") as f:
                f.write(text)
            proxy = subprocess.Popen(
                ["nutcracker", "-c", config, "-s", str(free_port()), "-o", os.path.join(tmp, "nutcracker.log")]
            )
            procs.append(proxy)
            wait_for_port(proxy_port)
            yield proxy_port, ports
        finally:
            for proc in procs:
                proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=TIMEOUT)
                except subprocess.TimeoutExpired:
                    proc.kill()


def proxy_client(port):
    # nutcracker closes the connection of a client sending a command it does
    # not proxy. redis-py 5 and later send CLIENT SETINFO on connecting, and
    # 8 sends HELLO 3: ask for neither.
    try:
        return redis.Redis(
            host="127.0.0.1", port=port, socket_timeout=TIMEOUT, protocol=2, lib_name=None, lib_version=None
        )
    except TypeError:  # redis-py before 5 sends neither
        return redis.Redis(host="127.0.0.1", port=port, socket_timeout=TIMEOUT)


def test_keys_spread_over_the_three_servers(cluster):
    proxy_port, ports = cluster
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # lib_name's new name differs between versions
        client = proxy_client(proxy_port)
    for i in range(300):
        assert client.set(f"key{i}", f"value{i}")
    assert client.get("key7") == b"value7"
    assert client.mget(["key1", "key2", "nothing", "key299"]) == [b"value1", b"value2", None, b"value299"]
    assert client.incr("counter") == 1 and client.incrby("counter", 41) == 42
    assert client.append("key1", "!") == len("value1!")
    assert client.delete("key2", "key3") == 2
    assert client.exists("key2") == 0 and client.exists("key4") == 1
    pipe = client.pipeline(transaction=False)
    for i in range(10, 20):
        pipe.get(f"key{i}")
    assert pipe.execute() == [f"value{i}".encode() for i in range(10, 20)]
    # Each key is on exactly one server, and every server holds some.
    shards = [redis.Redis(host="127.0.0.1", port=p, socket_timeout=TIMEOUT) for p in ports]
    sizes = [s.dbsize() for s in shards]
    assert all(n > 0 for n in sizes), sizes
    assert sum(sizes) == 300 - 2 + 1, sizes
    for i in (0, 1, 150, 299):
        assert sum(s.exists(f"key{i}") for s in shards) == 1
