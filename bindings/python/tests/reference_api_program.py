"""A program using the reference's remaining DBM methods (SetAndGet,
RemoveAndGet, CompareExchangeAndGet, PopFirst, PushLast, Search, the flat
record exports) and File. Run as `python reference_api_program.py MODULE
DIR`: MODULE is `tkrzw` (the reference) or `kuradb.compat.tkrzw`; the
outputs must be the same."""

import importlib
import os
import sys

tkrzw = importlib.import_module(sys.argv[1])
directory = sys.argv[2]
ANY = tkrzw.DBM.ANY_DATA


def code(status):
    return tkrzw.Status.CodeName(status.GetCode())


def pair(result):
    return code(result[0]), result[1]


# Every class but the skip database, by the reference's extensions (the two
# skip databases differ in what a process shows of updates not yet
# synchronized, which is not this program's subject). Unordered classes list
# search results sorted, as their order is their own.
for ext in ["tkh", "tkt", "tkmt", "tkmb", "tkmc", "tksh", "tkst"]:
    path = os.path.join(directory, "casket." + ext)
    dbm = tkrzw.DBM()
    print(ext, code(dbm.Open(path, True, truncate=True)))
    ordered = dbm.IsOrdered()
    print(pair(dbm.SetAndGet("a", "1")), pair(dbm.SetAndGet("a", "2")), pair(dbm.SetAndGet("a", "3", False)))
    print(pair(dbm.SetAndGet(b"b", b"1")), pair(dbm.SetAndGet("b", b"2")), dbm.Get("a"))
    print(pair(dbm.RemoveAndGet("a")), pair(dbm.RemoveAndGet("a")), pair(dbm.RemoveAndGet(b"b")))
    for expected, desired in [(None, "x"), (None, "y"), ("x", "z"), ("x", "w"), (ANY, "q"), (ANY, ANY),
                              (ANY, None), (ANY, "r"), (None, ANY), ("nope", ANY), (b"q", b"s")]:
        print(repr(expected), repr(desired), pair(dbm.CompareExchangeAndGet("c", expected, desired)), dbm.Get("c"))
    print(code(dbm.Clear()))
    status = tkrzw.Status()
    print(dbm.PopFirst(), dbm.PopFirst(status), code(status))
    print(code(dbm.PushLast("v1", 1.5)), code(dbm.PushLast("v2", 1.5)), code(dbm.PushLast(b"v3", 2)))
    records = sorted(dbm)
    print(records)
    if ordered:
        print(dbm.PopFirst(), dbm.PopFirstStr(status), code(status))
        print(dbm.Count())
    print(code(dbm.Clear()))
    for key in ["apple", "banana", "apricot", "cherry", "grape", "pineapple", "ap", "APPLE", "a.p",
                "日本語", "日本", "an apple pie"]:
        dbm.Set(key, "x")
    modes = ["contain", "begin", "end", "regex", "containcase", "containword", "containcaseword"]
    for mode in modes:
        for pattern in ["ap", "apple", "p.e", "日本X", b"ap"]:
            found = dbm.Search(mode, pattern)
            print(mode, repr(pattern), found if ordered else sorted(found), len(dbm.Search(mode, pattern, 2)))

    for mode in ["edit", "editbin"]:
        for pattern in ["ap", "apple", "日本X", "grap"]:
            print(mode, pattern, dbm.Search(mode, pattern), dbm.Search(mode, pattern, 3))
    if ordered:
        for mode in ["upper", "upperinc", "lower", "lowerinc"]:
            for pattern in ["ap", "apple", "zzz", ""]:
                print(mode, repr(pattern), dbm.Search(mode, pattern, 3), dbm.Search(mode, pattern, 100))
    for mode, pattern in [("bogus", "x"), ("regex", "(")]:
        try:
            dbm.Search(mode, pattern)
        except tkrzw.StatusException as e:
            print(mode, "raises", code(e.GetStatus()))
    # Flat records and key lines, through a File.
    flat = tkrzw.File()
    print(code(flat.Open(os.path.join(directory, ext + ".flat"), True, truncate=True)))
    print(code(dbm.ExportToFlatRecords(flat)), flat.GetSize())
    lines = tkrzw.File()
    print(code(lines.Open(os.path.join(directory, ext + ".txt"), True, truncate=True)))
    print(code(dbm.ExportKeysAsLines(lines)), lines.GetSize())
    text = lines.ReadStr(0, lines.GetSize())
    print(sorted(text.split("\n")))
    print(code(lines.Close()), code(dbm.Clear()))
    print(code(dbm.ImportFromFlatRecords(flat)), dbm.Count(), dbm.GetStr("日本語"))
    print(code(flat.Close()), code(dbm.Close()))

# File on its own.
f = tkrzw.File()
print(repr(f), f.GetSize(), f.GetPath(), code(f.Close()))
print(code(f.Open(os.path.join(directory, "plain.dat"), True, truncate=True)))
status = tkrzw.Status()
print(code(f.Write(0, "abc")), f.Append("de", status), code(status), f.Read(1, 3), f.ReadStr(0, 5), f.GetSize())
print(f.Read(4, 5, status), code(status), code(f.Truncate(2)), f.GetSize(), code(f.Synchronize(True)))
print(code(f.Close()), code(f.Open(os.path.join(directory, "none", "x"), False)))
