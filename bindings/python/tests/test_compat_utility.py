"""kuradb.compat.tkrzw's Utility against the reference's: one program run by
both must print the same."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from test_compat_tkrzw import REFERENCE_PYTHON, _has_reference

PROGRAM = pathlib.Path(__file__).with_name("utility_program.py")


def run(python: str, module: str) -> str:
    done = subprocess.run([python, str(PROGRAM), module], capture_output=True)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return done.stdout.decode("utf-8")


def test_known_values_under_the_compat_module() -> None:
    out = run(sys.executable, "kuradb.compat.tkrzw")
    # python3-tkrzw 0.1.29 over tkrzw 1.0.25 prints these.
    assert "b'abc' 16973900370012003622 1765794342254572867" in out
    assert "b'abc' 1000 208 " in out and "kitten sitting 3" in out and "日本語 日本 1" in out
    assert out.rstrip().endswith("True True")


@pytest.mark.skipif(not _has_reference(), reason="the reference's module (python3-tkrzw) is not installed")
def test_same_output_as_the_reference() -> None:
    assert run(sys.executable, "kuradb.compat.tkrzw") == run(REFERENCE_PYTHON, "tkrzw")
