"""The differential script's driver for Python: ``python3 driver.py MODULE
SCRIPT DIR`` with MODULE ``kuradb.compat.tkrzw`` (kuradb's layer) or
``tkrzw`` (the reference's python3-tkrzw, where installed). A call the
module does not have answers ``ABSENT``; only the reference may lack one."""
import importlib
import re
import sys
from typing import Any, List, Optional, Tuple


def show(answer: Any) -> str:
    """One spelling for every driver: booleans in lower case, lists joined
    by commas, maps sorted by key, bytes as text."""
    if answer is None:
        return "-"
    if isinstance(answer, bool):
        return "true" if answer else "false"
    if isinstance(answer, bytes):
        return answer.decode("utf-8", "replace")
    if isinstance(answer, dict):
        return ",".join(f"{show(k)}={show(v)}" for k, v in sorted(answer.items(), key=lambda kv: show(kv[0])))
    if isinstance(answer, (list, tuple)):
        return ",".join(show(a) for a in answer)
    return str(answer)


def pairs(spec: str, any_data: bytes) -> List[Tuple[str, Any]]:
    """``k=v,k=-,k=*``: "-" is absent, "*" any value."""
    found: List[Tuple[str, Any]] = []
    for item in spec.split(","):
        key, value = item.split("=", 1)
        found.append((key, None if value == "-" else any_data if value == "*" else value))
    return found


class Driver:
    def __init__(self, tkrzw: Any, directory: str) -> None:
        self.tkrzw = tkrzw
        self.directory = directory
        self.dbm = tkrzw.DBM()
        other = tkrzw.DBM()
        other.Open(directory + "/other.tks", True)
        other.Set("k", "from-b")
        other.Set("only-b", "1")
        other.Close()
        self.index: Any = tkrzw.Index() if hasattr(tkrzw, "Index") else None
        self.it: Any = None

    def call(self, op: str, args: List[Optional[str]]) -> Tuple[Any, Any]:
        tkrzw, dbm, it, index = self.tkrzw, self.dbm, self.it, self.index
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
            answer = dbm.PopFirstStr(status)
            answer = None if answer is None else ":".join(answer)
        elif op == "pop_first_hex":
            record = dbm.PopFirst(status)
            answer = None if record is None else f"{record[0].hex()}:{record[1].decode()}"
        elif op == "set_multi":
            status = dbm.SetMulti(args[0] == "true", **dict(a.split("=", 1) for a in args[1:]))
        elif op == "get_multi":
            answer = dbm.GetMultiStr(*args)
        elif op == "remove_multi":
            status = dbm.RemoveMulti(*args)
        elif op == "append_multi":
            status = dbm.AppendMulti(args[0], **dict(a.split("=", 1) for a in args[1:]))
        elif op == "compare_exchange_multi":
            status = dbm.CompareExchangeMulti(pairs(args[0], dbm.ANY_DATA), pairs(args[1], dbm.ANY_DATA))
        elif op == "rekey":
            status = dbm.Rekey(args[0], args[1], args[2] == "true", args[3] == "true")
        elif op == "set_and_get":
            status, answer = dbm.SetAndGet(args[0], args[1], args[2] == "true")
        elif op == "compare_exchange_and_get":
            expected = dbm.ANY_DATA if args[1] == "*" else args[1]
            status, answer = dbm.CompareExchangeAndGet(args[0], expected, args[2])
        elif op == "remove_and_get":
            status, answer = dbm.RemoveAndGet(args[0])
        elif op == "contains":
            answer = args[0] in dbm
        elif op == "file_path":
            answer = str(dbm.GetFilePath()).replace(self.directory, "PATH")
        elif op == "file_size_positive":
            answer = (dbm.GetFileSize() or 0) > 0
        elif op == "should_be_rebuilt":
            answer = dbm.ShouldBeRebuilt()
        elif op == "inspect":
            answer = dbm.Inspect().get(args[0])
        elif op == "clear":
            status = dbm.Clear()
        elif op == "push_last":
            status = dbm.PushLast(args[0], float(args[1]))
        elif op == "search":
            answer = dbm.Search(args[0], args[1], int(args[2]))
            if args[3] == "sorted":
                answer = sorted(answer)
        elif op in ("export_flat", "import_flat"):
            file = tkrzw.File()
            file.Open(args[0], op == "export_flat", truncate=op == "export_flat")
            status = dbm.ExportToFlatRecords(file) if op == "export_flat" else dbm.ImportFromFlatRecords(file)
            file.Close()
        elif op == "export_keys":
            file = tkrzw.File()
            file.Open(args[0], True, truncate=True)
            status = dbm.ExportKeysAsLines(file)
            file.Close()
            with open(args[0], encoding="utf-8") as lines:
                answer = sorted(lines.read().splitlines())
        elif op == "process":
            seen: List[Any] = []

            def fate(key: bytes, value: Optional[bytes]) -> Any:
                seen.append(value)
                return None if args[1] == "noop" else False if args[1] == "remove" else args[1]

            status = dbm.Process(args[0], fate, len(args) < 3)
            answer = seen
        elif op == "process_multi":
            seen_multi: List[str] = []

            def fate_of(word: str) -> Any:
                def call(key: bytes, value: Optional[bytes]) -> Any:
                    seen_multi.append(f"{show(key)}={show(value)}")
                    return None if word == "noop" else False if word == "remove" else word
                return call

            status = dbm.ProcessMulti([(k, fate_of(w)) for k, w in pairs(args[0], b"")], len(args) < 2)
            answer = sorted(seen_multi)
        elif op == "process_each":
            seen_each: List[str] = []

            def each(key: Optional[bytes], value: Optional[bytes]) -> Any:
                seen_each.append(f"{show(key)}={show(value)}")
                return None if args[0] == "noop" else False if args[0] == "remove" else args[0]

            status = dbm.ProcessEach(each, len(args) < 2)
            answer = sorted(seen_each)
        elif op == "iter":
            self.it = dbm.MakeIterator()
        elif op == "iter_all":
            cursor = dbm.MakeIterator()
            cursor.First()
            found = []
            while (record := cursor.GetStr()) is not None:
                found.append(":".join(record))
                cursor.Next()
            answer = sorted(found)
        elif op == "iter_first":
            status = it.First()
        elif op == "iter_last":
            status = it.Last()
        elif op == "iter_jump":
            status = it.Jump(args[0])
        elif op == "iter_jump_lower":
            status = it.JumpLower(args[0], args[1] == "true")
        elif op == "iter_jump_upper":
            status = it.JumpUpper(args[0], args[1] == "true")
        elif op == "iter_next":
            status = it.Next()
        elif op == "iter_previous":
            status = it.Previous()
        elif op == "iter_get":
            answer = it.GetStr(status)
            answer = None if answer is None else ":".join(answer)
        elif op == "iter_step":
            answer = it.StepStr(status)
            answer = None if answer is None else ":".join(answer)
        elif op == "iter_set":
            status = it.Set(args[0])
        elif op == "iter_remove":
            status = it.Remove()
        elif op == "index_open":
            status = index.Open(args[0], True, truncate=True)
        elif op == "index_close":
            status = index.Close()
        elif op == "index_add":
            status = index.Add(args[0], args[1])
        elif op == "index_remove":
            status = index.Remove(args[0], args[1])
        elif op == "index_get":
            answer = index.GetValuesStr(args[0], int(args[1]))
        elif op == "index_count":
            answer = index.Count()
        elif op == "index_list":
            cursor = index.MakeIterator()
            cursor.First()
            found = []
            while (record := cursor.GetStr()) is not None:
                found.append(f"{record[0]}:{record[1]}")
                cursor.Next()
            answer = found
        elif op == "edit_distance":
            answer = tkrzw.Utility.EditDistanceLev(args[0] or "", args[1] or "")
        elif op == "serialize_int":
            data = tkrzw.Utility.SerializeInt(int(args[0]))
            answer = f"{data.hex()}/{tkrzw.Utility.DeserializeInt(data)}"
        elif op == "serialize_float":
            data = tkrzw.Utility.SerializeFloat(float(args[0]))
            answer = f"{data.hex()}/{tkrzw.Utility.DeserializeFloat(data)}"
        elif op == "hashes":
            whole = tkrzw.Utility.PrimaryHash(args[0])
            answer = [whole, tkrzw.Utility.PrimaryHash(args[0], int(args[1])),
                      tkrzw.Utility.SecondaryHash(args[0], int(args[1]))]
        elif op == "version_format":
            answer = re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", tkrzw.Utility.VERSION) is not None
        elif op == "status_string":
            code = int(args[0])
            answer = str(tkrzw.Status(code) if args[1] is None else tkrzw.Status(code, args[1]))
        elif op == "index_contains":
            answer = index.Check(args[0], args[1])
        elif op == "index_walk":
            cursor = index.MakeIterator()
            found = []
            for move in args:
                step, _, at = move.partition("=")
                if step == "jump":
                    cursor.Jump(*at.split(":"))
                else:
                    {"first": cursor.First, "last": cursor.Last, "next": cursor.Next,
                     "previous": cursor.Previous}[step]()
                found.append(show(cursor.GetStr() and ":".join(cursor.GetStr())))
            answer = found
        elif op == "status_names":
            answer = [tkrzw.Status.CodeName(code) for code in range(int(args[0]))]
        else:
            raise ValueError(f"unknown call {op}")
        return status, answer


def main() -> None:
    module = sys.argv[1]
    tkrzw = importlib.import_module(module)
    script, directory = sys.argv[2], sys.argv[3]
    driver = Driver(tkrzw, directory)
    for line in open(script, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        # "! CALL": kuradb answers differently from the reference on purpose;
        # its layers compare with each other, and the reference skips it.
        kuradb_only = line.startswith("! ")
        line = line[2:] if kuradb_only else line
        words = line.replace("PATH", directory).split(" ")
        op, args = words[0], [None if w == "-" else w for w in words[1:]]
        shown = f"{op} {' '.join(words[1:]).replace(directory, 'PATH')} =>"
        if kuradb_only and module == "tkrzw":
            print(shown, "ABSENT")
            continue
        try:
            status, answer = driver.call(op, args)
        except AttributeError:
            if module != "tkrzw":
                raise
            print(shown, "ABSENT")
            continue
        except (TypeError, tkrzw.StatusException):
            # The languages raise differently; that it raised is what compares.
            print(shown, "RAISES")
            continue
        print(shown, tkrzw.Status.CodeName(status.GetCode()), show(answer))


main()
