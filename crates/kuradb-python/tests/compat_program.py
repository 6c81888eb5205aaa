"""A program written for the reference's Python module (tkrzw). Run as
`python compat_program.py MODULE DIR`: MODULE is `tkrzw` (the reference) or
`kuradb.compat.tkrzw`; the outputs must be the same."""

import importlib
import os
import sys

tkrzw = importlib.import_module(sys.argv[1])
directory = sys.argv[2]


def code(status):
    return tkrzw.Status.CodeName(status.GetCode())


for ext, params in [("tkh", {"num_buckets": 100, "update_mode": "UPDATE_APPENDING"}),
                    ("tkt", {"key_comparator": "LexicalKeyComparator", "max_cached_pages": 100})]:
    path = os.path.join(directory, "casket." + ext)
    dbm = tkrzw.DBM()
    print(ext, code(dbm.Open(path, True, truncate=True, **params)))
    print(code(dbm.Set("1", "one")), code(dbm.Set(b"2", b"two")), code(dbm.Set("1", "uno", False)))
    status = tkrzw.Status()
    print(dbm.Get("1"), dbm.GetStr("2"), dbm.Get("3"), dbm.Get("3", status), code(status))
    print(dbm.Get(b"1", status), code(status), dbm.Get(2), dbm.Get(bytearray(b"1")), code(dbm.Set(7, 7.5)), dbm.Get("7"))
    print(code(dbm.Remove(7)), code(dbm.Remove("7")), dbm.Get("7"))
    print(code(dbm.Append("1", "x", ":")), dbm.GetStr("1"), code(dbm.Remove("9")), code(dbm.Remove("2")))
    print(dbm.Increment("n", 5), dbm.Increment("n"), dbm.Increment("n", 0, 100))
    print(code(dbm.CompareExchange("1", "one:x", "ONE")), code(dbm.CompareExchange("1", "zzz", "Z")))
    print(code(dbm.CompareExchange("new", None, "born")), dbm.GetStr("new"))
    print(code(dbm.Process("new", lambda k, v: v + b"!", True)), dbm.GetStr("new"))
    print(code(dbm.Process("new", lambda k, v: False, True)), dbm.Get("new"))
    print(dbm.Count(), len(dbm), "1" in dbm, "2" in dbm, dbm["1"], dbm[b"1"])
    try:
        dbm["missing"]
    except tkrzw.StatusException as e:
        print("StatusException", code(e.status if hasattr(e, "status") else tkrzw.Status(7)))
    dbm["k"] = "v"
    print(sorted(dbm.GetMulti("1", "k", "nope").items()))
    print(code(dbm.SetMulti(True, a="A", b="B")), sorted(k for k, v in dbm))
    print(dbm.GetFilePath() == path, dbm.GetFileSize() > 0, dbm.ShouldBeRebuilt() in (True, False))
    print(code(dbm.Synchronize(False)), code(dbm.Rebuild()), dbm.Count())
    it = dbm.MakeIterator()
    print(code(it.First()))
    records = []
    while True:
        record = it.Get()
        if record is None:
            break
        records.append(record)
        it.Next()
    print(sorted(records), code(it.Next()))
    if dbm.IsOrdered():
        print(code(it.Last()), it.GetKeyStr(), code(it.JumpLower("2")), it.GetKey(), code(it.Previous()))
        print(code(it.JumpUpper("1", True)), it.GetStr(), code(it.Jump("a")), it.GetValueStr())
    else:
        print(code(it.Last()), code(it.JumpLower("2")))
        print(code(it.Jump("a")), it.GetStr(), it.GetValue())
    print(code(it.Set("AA")), dbm.GetStr("a"), code(it.Remove()), dbm.Get("a"))
    print(code(dbm.Clear()), dbm.Count(), code(dbm.Close()))
    try:
        dbm.Close()
    except TypeError:
        print("closed: TypeError")
    print(dbm.Open(path, False, concurrent=True).IsOK(), code(dbm.Set("x", "y")), code(dbm.Close()))
try:
    tkrzw.Status(tkrzw.Status.NOT_FOUND_ERROR, "x").OrDie()
except tkrzw.StatusException as e:
    print("OrDie", str(e))
print(tkrzw.Status() == tkrzw.Status.SUCCESS, tkrzw.Status(7) == 7, tkrzw.Status(7, "m").IsOK(), str(tkrzw.Status()))

unopened = tkrzw.DBM()
for call in (lambda: unopened.Get("x"), lambda: unopened.Set("x", "y"), lambda: unopened.Remove("x")):
    try:
        call()
    except TypeError as e:
        print("unopened:", e)
