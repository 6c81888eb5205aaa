"""The twemproxy routing of scripts/try-scaling (fnv1a_64 with modula, in
scripts/try-scaling.d/twemproxy_hash.py) against nutcracker itself: three
stand-in servers record the keys nutcracker sends each, and every key must
be where server_of and server_of_arrow say. Skips, saying so, where
nutcracker is not installed."""

import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
NUTCRACKER = shutil.which("nutcracker") or ("/usr/sbin/nutcracker" if os.path.exists("/usr/sbin/nutcracker") else None)
TIMEOUT = 10


def load_module():
    path = os.path.join(ROOT, "scripts", "try-scaling.d", "twemproxy_hash.py")
    spec = importlib.util.spec_from_file_location("twemproxy_hash", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Recorder:
    """A stand-in Redis server that answers +OK to every command and records
    the key of each SET."""

    def __init__(self):
        self.keys = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        with conn, conn.makefile("rb") as f:
            while True:
                header = f.readline()
                if not header:
                    return
                args = []
                for _ in range(int(header[1:])):
                    length = int(f.readline()[1:])
                    args.append(f.read(length + 2)[:-2])
                if args[0].upper() == b"SET":
                    self.keys.append(args[1])
                conn.sendall(b"+OK\r\n")

    def close(self):
        self.sock.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_of_matches_nutcracker():
    if NUTCRACKER is None:
        pytest.skip("nutcracker is not installed (apt-get install nutcracker)")
    pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")
    routing = load_module()
    servers = [Recorder() for _ in range(3)]
    # Every single byte (the bytes of 0x80 and above are where a plain
    # FNV-1a differs), UTF-8 text, and the empty key (not hashed: the first
    # server).
    keys = [bytes([b]) for b in range(256)] + [f"key:{i}".encode() for i in range(300)]
    keys += ["städte:münchen".encode(), "日本:東京".encode(), b"\xff\xfe\x80tail", b""]
    listen = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "nutcracker.yml")
        with open(config, "w") as f:
            f.write(
                f"pool:\n  listen: 127.0.0.1:{listen}\n  hash: fnv1a_64\n  distribution: modula\n"
                "  redis: true\n  auto_eject_hosts: false\n  servers:\n"
                + "".join(f"    - 127.0.0.1:{s.port}:1 server{i}\n" for i, s in enumerate(servers))
            )
        proxy = subprocess.Popen(
            [NUTCRACKER, "-c", config, "-s", str(free_port()), "-o", os.path.join(tmp, "nutcracker.log")]
        )
        try:
            deadline = time.monotonic() + TIMEOUT
            while True:
                try:
                    client = socket.create_connection(("127.0.0.1", listen), timeout=TIMEOUT)
                    break
                except OSError:
                    assert time.monotonic() < deadline, f"nutcracker does not listen on {listen}"
                    time.sleep(0.05)
            with client, client.makefile("rb") as replies:
                for key in keys:
                    client.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n" % (len(key), key))
                    reply = replies.readline()
                    assert reply == b"+OK\r\n", (key, reply)
        finally:
            proxy.terminate()
            proxy.wait(timeout=TIMEOUT)
            for s in servers:
                s.close()
    where = {key: i for i, s in enumerate(servers) for key in s.keys}
    routed = [k for k in keys if k in where]
    assert len(routed) == len(keys)
    assert {where[k] for k in routed} == {0, 1, 2}
    assert [routing.server_of(k, 3) for k in routed] == [where[k] for k in routed]
    assert routing.server_of_arrow(pa.array(routed, pa.binary()), 3).to_pylist() == [where[k] for k in routed]
    text = ["städte:münchen", "日本:東京", "", "key:7"]  # a string array, as Spark gives
    assert routing.server_of_arrow(pa.array(text), 3).to_pylist() == [where[t.encode()] for t in text]
