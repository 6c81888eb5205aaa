"""The differential script's driver for Python: ``python3 driver.py MODULE
SCRIPT DIR`` with MODULE ``kuradb.compat.tkrzw`` (kuradb's layer) or
``tkrzw`` (the reference's python3-tkrzw, where installed)."""
import importlib
import sys


def main() -> None:
    tkrzw = importlib.import_module(sys.argv[1])
    script, directory = sys.argv[2], sys.argv[3]
    dbm = tkrzw.DBM()
    other = tkrzw.DBM()
    other.Open(directory + "/other.tks", True)
    other.Set("k", "from-b")
    other.Set("only-b", "1")
    other.Close()
    for line in open(script, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = line.replace("PATH", directory).split(" ")
        op, args = words[0], [None if w == "-" else w for w in words[1:]]
        status, answer = tkrzw.Status(), None
        if op == "open":
            params = dict(a.split("=", 1) for a in args[2:])
            status = dbm.Open(args[0], args[1] == "true", **params)
        elif op == "close":
            status = dbm.Close()
        elif op == "count":
            answer = dbm.Count()
        elif op == "set":
            status = dbm.Set(args[0], args[1], args[2] == "true")
        elif op == "get":
            answer = dbm.GetStr(args[0], status)
        elif op == "append":
            status = dbm.Append(args[0], args[1], args[2])
        elif op == "increment":
            answer = dbm.Increment(args[0], int(args[1]), int(args[2]), status)
        elif op == "compare_exchange":
            status = dbm.CompareExchange(args[0], args[1], args[2])
        elif op == "remove":
            status = dbm.Remove(args[0])
        elif op == "synchronize":
            status = dbm.Synchronize(args[0] == "true")
        elif op == "synchronize_with":
            status = dbm.Synchronize(False, merge=args[0], reducer="ReduceToFirst")
            answer = dbm.Count()
        elif op == "rebuild":
            status = dbm.Rebuild(**dict(a.split("=", 1) for a in args))
            answer = dbm.Count()
        elif op == "pop_first":
            record = dbm.PopFirstStr(status)
            answer = None if record is None else f"{record[0]}:{record[1]}"
        else:
            raise ValueError(f"unknown call {op}")
        shown = "-" if answer is None else str(answer)
        print(f"{line.split(' ')[0]} {' '.join(words[1:]).replace(directory, 'PATH')} => "
              f"{tkrzw.Status.CodeName(status.GetCode())} {shown}")


main()
