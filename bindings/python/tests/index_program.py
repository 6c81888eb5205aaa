"""A program written for the reference's Python module's Index (tkrzw). Run
as `python index_program.py MODULE DIR`: MODULE is `tkrzw` (the reference)
or `kuradb.compat.tkrzw`; the outputs must be the same."""

import importlib
import os
import sys

tkrzw = importlib.import_module(sys.argv[1])
directory = sys.argv[2]


def code(status):
    return tkrzw.Status.CodeName(status.GetCode())


for path, params in [(os.path.join(directory, "casket.tkt"), {"truncate": True}),
                     ("", {}),
                     (os.path.join(directory, "dec.tkt"), {"truncate": True,
                                                           "key_comparator": "PairDecimalKeyComparator"})]:
    index = tkrzw.Index()
    print(index.IsOpen(), code(index.Open(path, True, **params)), index.IsOpen(), index.IsWritable())
    pairs = [("10", "a"), ("9", "b"), ("01", "c"), ("1", "d"), ("1", "a"), (b"", b""), ("x\0y", "\0"), ("1", "a")]
    print([code(index.Add(k, v)) for k, v in pairs])
    print(index.Count(), len(index), index.Check("1", "a"), index.Check("1", "z"), ("9", "b") in index)
    print(index.GetValues("1"), index.GetValuesStr("1"), index.GetValues("1", 1), index.GetValues("7"))
    print(code(index.Remove("9", "b")), code(index.Remove("9", "b")), index.Count())
    print(list(index))
    it = index.MakeIterator()
    it.Last()
    seen = []
    while True:
        pair = it.Get()
        if pair is None:
            break
        seen.append(pair)
        it.Previous()
    print(seen)
    it.Jump("1")
    print(it.Get(), it.GetStr())
    it.Jump("1", "b")
    print(it.Get())
    it.Next()
    print(it.Get())
    it.First()
    print(it.Get(), [p for p in it])
    print(code(index.Synchronize(False)), code(index.Rebuild()), index.Count())
    print(code(index.Clear()), index.Count(), list(index))
    print(code(index.Close()), index.IsOpen())

reader = tkrzw.Index()
path = os.path.join(directory, "casket.tkt")
index = tkrzw.Index()
index.Open(path, True, truncate=True).OrDie()
index.Add("tokyo", "u1").OrDie()
index.Close().OrDie()
print(code(reader.Open(path, False)), reader.IsWritable(), reader.GetValues("tokyo"))
print(code(reader.Add("osaka", "u2")) != "SUCCESS", reader.Count())
print(code(reader.Close()))
try:
    reader.Count()
except TypeError:
    print("TypeError")
