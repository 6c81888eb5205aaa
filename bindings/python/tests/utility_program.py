"""Prints what the reference's ``Utility`` answers; run under python3-tkrzw
and under kuradb.compat.tkrzw, the two outputs must be the same."""

import importlib
import sys

tkrzw = importlib.import_module(sys.argv[1])
U = tkrzw.Utility
samples = [b"", b"a", b"abc", "日本語", b"hello world", bytes(range(256)), b"x" * 17, b"\xff" * 64]
for data in samples:
    for count in (None, 1, 7, 1000, 1 << 31, (1 << 32) - 1, 1 << 32, (1 << 40) + 3):
        if count is None:
            print(repr(data)[:20], U.PrimaryHash(data), U.SecondaryHash(data))
        else:
            print(repr(data)[:20], count, U.PrimaryHash(data, count), U.SecondaryHash(data, count))
for a, b in [("kitten", "sitting"), ("日本語", "日本"), ("", "abc"), ("abc", "abc")]:
    print(a, b, U.EditDistanceLev(a, b))
print(U.OS_NAME, U.PAGE_SIZE, U.INT32MIN, U.INT32MAX, U.UINT32MAX, U.INT64MIN, U.INT64MAX, U.UINT64MAX)
print(U.GetMemoryUsage() > 0, U.GetMemoryCapacity() > U.GetMemoryUsage())
