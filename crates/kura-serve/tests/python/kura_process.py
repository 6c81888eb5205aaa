"""One `kura serve` process for a test: the binary (KURA_BIN, else
target/debug/kura), started on a free loopback port, stopped after."""

import contextlib
import os
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
KURA = os.environ.get("KURA_BIN", os.path.join(ROOT, "target", "debug", "kura"))
TIMEOUT = 20


@contextlib.contextmanager
def serving(*databases):
    """Serves `databases` (paths or specs); yields the port. Skips the test,
    saying why, without the binary."""
    if not os.path.exists(KURA):
        pytest.skip(f"no kura binary at {KURA} (cargo build -p kura-cli, or set KURA_BIN)")
    proc = subprocess.Popen(
        [KURA, "serve", *databases, "--address", "127.0.0.1:0", "--log_level", "warn"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on "), line
        yield int(line.rsplit(":", 1)[1])
    finally:
        proc.terminate()
        proc.wait(timeout=TIMEOUT)
