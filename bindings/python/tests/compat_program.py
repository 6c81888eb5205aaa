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

# An empty path: an on-memory database with no file. The working directory
# is an empty one of its own, to show that nothing is written anywhere.
memory_dir = os.path.join(directory, "memory")
os.mkdir(memory_dir)
os.chdir(memory_dir)
for params in [{}, {"dbm": "TinyDBM"}, {"dbm": "BabyDBM"}, {"dbm": "CacheDBM"}, {"dbm": "StdHashDBM"},
               {"dbm": "StdTreeDBM"}, {"num_shards": 3}, {"num_shards": 2, "dbm": "BabyDBM"}]:
    dbm = tkrzw.DBM()
    print("memory", params, code(dbm.Open("", True, **params)), dbm.IsOpen())
    print(code(dbm.Set("b", "2")), code(dbm.Set("a", "1")), dbm.GetStr("a"), dbm.Count())
    print(dbm.GetFilePath(), dbm.GetFileSize(), dbm.IsWritable(), dbm.IsHealthy(), dbm.IsOrdered())
    print(dbm.Inspect()["class"], dbm.Inspect()["num_records"], str(dbm), repr(dbm))
    print(code(dbm.Synchronize(False)), code(dbm.Synchronize(True)), code(dbm.Rebuild()), dbm.ShouldBeRebuilt())
    print(code(dbm.CopyFileData(os.path.join(directory, "copy.flat"))), code(dbm.Close()), dbm.IsOpen())
    print(code(dbm.Open("", True, **params)), dbm.Count(), code(dbm.Close()))
for params in [{"dbm": "HashDBM"}, {"dbm": "TreeDBM"}, {"dbm": "SkipDBM"}, {"dbm": "HashDBM", "num_shards": 2}]:
    dbm = tkrzw.DBM()
    print("memory", params, code(dbm.Open("", True, **params)), dbm.IsOpen())
dbm = tkrzw.DBM()
print("memory read-only", code(dbm.Open("", False)), dbm.IsWritable(), code(dbm.Set("a", "1")), dbm.Count())
print(code(dbm.Close()), os.listdir("."), os.path.exists(os.path.join(directory, "copy.flat")))

# RestoreDatabase: every record, the records as they were at an offset of a
# file in appending mode, a missing source, a new path already taken.
path = os.path.join(directory, "restore.tkh")
dbm = tkrzw.DBM()
dbm.Open(path, True, update_mode="UPDATE_APPENDING", num_buckets=10).OrDie()
dbm.Set("k", "first").OrDie()
dbm.Synchronize(False).OrDie()
then = dbm.GetFileSize()
dbm.Set("k", "second").OrDie()
dbm.Set("j", "jay").OrDie()
dbm.Close().OrDie()
for args in [("all.tkh",), ("then.tkh", "", then), ("named.tkh", "HashDBM", 0), ("all.tkh",)]:
    new_path = os.path.join(directory, args[0])
    print("restore", args[:2], code(tkrzw.DBM.RestoreDatabase(path, new_path, *args[1:])))
    dbm = tkrzw.DBM()
    dbm.Open(new_path, False).OrDie()
    print(sorted(dbm), code(dbm.Close()))
print("restore", code(tkrzw.DBM.RestoreDatabase(os.path.join(directory, "missing.tkh"),
                                                  os.path.join(directory, "none.tkh"))))

unopened = tkrzw.DBM()
for call in (lambda: unopened.Get("x"), lambda: unopened.Set("x", "y"), lambda: unopened.Remove("x")):
    try:
        call()
    except TypeError as e:
        print("unopened:", e)
