"""Times 1,000,000 sets then gets of 8-byte keys and 100-byte values from
Python: kuradb (hash on mmap, tree), the reference's module (tkrzw), dbm.gnu
and a dict, each where importable.

    python bench/bench.py [--num 1000000] [--dir /tmp]

One command compares them all when run by an interpreter that has both
kuradb and tkrzw, e.g. a venv made from /usr/bin/python3 with
--system-site-packages and `pip install ./bindings/python`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Tuple

Row = Tuple[str, float, float]


def keys(num: int) -> List[bytes]:
    return [b"%08d" % i for i in range(num)]


def time_store(name: str, store: Any, num: int, close: Callable[[], None]) -> Row:
    ks = keys(num)
    value = b"v" * 100
    start = time.perf_counter()
    for k in ks:
        store[k] = value
    mid = time.perf_counter()
    get = store.__getitem__
    for k in ks:
        get(k)
    end = time.perf_counter()
    close()
    return name, num / (mid - start), num / (end - mid)


def time_methods(name: str, set_: Callable[[bytes, bytes], Any], get: Callable[[bytes], Any],
                 num: int, close: Callable[[], None]) -> Row:
    ks = keys(num)
    value = b"v" * 100
    start = time.perf_counter()
    for k in ks:
        set_(k, value)
    mid = time.perf_counter()
    for k in ks:
        get(k)
    end = time.perf_counter()
    close()
    return name, num / (mid - start), num / (end - mid)


def candidates(num: int, directory: str) -> Iterator[Callable[[], Row]]:
    buckets = num * 2
    try:
        import kuradb

        def kura(ext: str, params: Dict[str, Any], label: str) -> Callable[[], Row]:
            def run() -> Row:
                db = kuradb.DBM(os.path.join(directory, "kura." + ext), True, truncate=True, **params)
                return time_methods(label, db.set, db.get, num, db.close)
            return run

        yield kura("kh", {"num_buckets": buckets}, "kuradb DBM hash (mmap-para)")
        yield kura("kt", {}, "kuradb DBM tree")

        def kura_protocol() -> Row:
            db = kuradb.DBM(os.path.join(directory, "kura2.kh"), True, truncate=True, num_buckets=buckets)
            return time_store("kuradb DBM hash, db[k] = v", db, num, db.close)
        yield kura_protocol
    except ImportError:
        pass
    try:
        tkrzw = importlib.import_module("tkrzw")

        def ref(ext: str, params: Dict[str, Any], label: str) -> Callable[[], Row]:
            def run() -> Row:
                db = tkrzw.DBM()
                db.Open(os.path.join(directory, "ref." + ext), True, truncate=True, **params).OrDie()
                return time_methods(label, db.Set, db.Get, num, db.Close)
            return run

        yield ref("tkh", {"num_buckets": buckets}, "tkrzw DBM hash (mmap-para)")
        yield ref("tkt", {}, "tkrzw DBM tree")
    except ImportError:
        pass
    try:
        import dbm.gnu

        def gnu() -> Row:
            db = dbm.gnu.open(os.path.join(directory, "gnu.db"), "nf")
            return time_store("dbm.gnu", db, num, db.close)
        yield gnu
    except ImportError:
        pass
    yield lambda: time_store("dict", {}, num, lambda: None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num", type=int, default=1_000_000)
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(dir=args.dir, prefix="kuradb-bench-")
    try:
        rows = [run() for run in candidates(args.num, directory)]
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print(f"{args.num} records, 8-byte keys, 100-byte values (operations per second)")
    print(f"| {'store':<30} | {'set':>12} | {'get':>12} |")
    print(f"| {'-' * 30} | {'-' * 12}: | {'-' * 12}: |")
    for name, sets, gets in rows:
        print(f"| {name:<30} | {sets:>12,.0f} | {gets:>12,.0f} |")


if __name__ == "__main__":
    main()
