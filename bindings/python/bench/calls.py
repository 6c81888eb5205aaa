"""Makes SETS Set calls then GETS Get calls through a module with the
reference's Python API (`tkrzw`, or `kuradb.compat.tkrzw`), for counting
instructions per call under callgrind: the difference between two runs
that differ only in SETS (or GETS), divided by the difference in calls,
is the cost of one call with the Python loop, and nothing else.

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \\
        python3 bench/calls.py MODULE PATH SETS GETS [--mode lz4] [--records json]

--records is small (8-byte keys, 100-byte values; the default), json or
random (scripts/bench-compression's generator, the same records); the
first 1,000 records are set before the counted calls, so GETS may exceed
SETS (the gets cycle over the records set). See docs/compression.md.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.machinery
import importlib.util
import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]


def records(kind: str, count: int) -> list:
    if kind == "small":
        return [(b"%08d" % i, b"v" * 100) for i in range(count)]
    loader = importlib.machinery.SourceFileLoader("bench_compression", str(ROOT / "scripts" / "bench-compression"))
    spec = importlib.util.spec_from_loader("bench_compression", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return list(module.records(kind, count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("module")
    parser.add_argument("path")
    parser.add_argument("sets", type=int)
    parser.add_argument("gets", type=int)
    parser.add_argument("--mode", default="none", choices=["none", "zstd", "lz4", "zlib", "lzma"])
    parser.add_argument("--records", default="small", choices=["small", "json", "random"])
    args = parser.parse_args()
    tkrzw = importlib.import_module(args.module)
    data = records(args.records, max(args.sets, 1000))
    dbm = tkrzw.DBM()
    dbm.Open(args.path, True, truncate=True, num_buckets=len(data) * 2,
             record_comp_mode="RECORD_COMP_" + args.mode.upper()).OrDie()
    set_, get = dbm.Set, dbm.Get
    for key, value in data[:1000]:
        set_(key, value)
    for key, value in data[:args.sets]:
        set_(key, value)
    stored = max(args.sets, 1000)
    for i in range(args.gets):
        get(data[i % stored][0])
    dbm.Close().OrDie()
    os.remove(args.path)


if __name__ == "__main__":
    main()
