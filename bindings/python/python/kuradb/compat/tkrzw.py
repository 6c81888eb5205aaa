"""The Python API of the reference implementation (Tkrzw's ``tkrzw`` module)
over kuradb, so that a program written for it runs by changing its import::

    from kuradb.compat import tkrzw

    dbm = tkrzw.DBM()
    dbm.Open("casket.tkh", True, truncate=True, num_buckets=100).OrDie()
    dbm.Set("hello", "world").OrDie()
    print(dbm.GetStr("hello"))
    dbm.Close().OrDie()

Methods return a ``Status`` where the reference does, and a value or None
(with an optional ``Status`` argument to receive the outcome) where it does.
Parameters keep the reference's names and values (``dbm="TreeDBM"``,
``file="PositionalParallelFile"``, ``key_comparator="DecimalKeyComparator"``,
``update_mode="UPDATE_APPENDING"``, …). Paths are str, bytes or any
os.PathLike. ``concurrent=True`` releases the GIL during each call, as the
reference's does; without it a call keeps the GIL (the database is
thread-safe either way; Python threads then take turns, which costs less per
call). ``num_shards`` shards as the reference
does: ``Open("casket.tkh", True, num_shards=3)`` makes the files
``casket.tkh-00000-of-00003`` … ``-00002-of-00003``, and ``num_shards=0``
(or any value below 1) opens the shard set that exists at the path or makes
one of a single shard. Unlike the reference, a number that differs from an
existing set's is refused (the reference starts a second, empty set beside
it); without ``num_shards`` a shard set is opened by its files. ``with
tkrzw.DBM() as dbm`` closes the database at the end of the block (the
reference has no context manager; an unopened one is left as it is). The
database files are kuradb's, not the reference's; the reference's own files
are read by ``kuradb`` through ``dbm="TkrzwDBM"`` (see the repository's
docs/reference-files.md).

An empty path opens an on-memory database with no file, as the reference
does: ``Open("", True)`` a TinyDBM, ``dbm=`` one of BabyDBM, CacheDBM,
StdHashDBM, StdTreeDBM, TinyDBM (a file class answers NOT_FOUND_ERROR), with
``num_shards`` a set of on-memory shards. As the reference's, it takes writes
even when opened read-only, IsWritable() says False, GetFilePath() and
GetFileSize() answer None (GetFilePath() "" for a shard set), CopyFileData
answers PRECONDITION_ERROR, and closing it writes nothing.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterator as _PyIterator, List, Optional, Tuple, Union

from .. import _kuradb

__all__ = ["Status", "StatusException", "DBM", "Iterator", "AsyncDBM", "Future", "Index", "IndexIterator", "File", "Utility"]

Data = Union[bytes, str]
# Parameters of the binding rather than of the database file.
_CLASS_NAMES = {"hash": "HashDBM", "tree": "TreeDBM", "skip": "SkipDBM", "tiny": "TinyDBM", "baby": "BabyDBM",
                "cache": "CacheDBM", "stdhash": "StdHashDBM", "stdtree": "StdTreeDBM"}


# The reference's Status, written in Rust (src/compat.rs) so that the record
# calls, which answer a new one each, make it without running Python code:
# the codes as class attributes (SUCCESS … APPLICATION_ERROR), Set, Join,
# GetCode, GetMessage, IsOK, OrDie, CodeName, comparison with a Status or an
# int code, str() and repr() as the reference's.
Status = _kuradb._CompatStatus


class StatusException(RuntimeError):
    """An exception carrying a Status."""

    def __init__(self, status: Status) -> None:
        super().__init__(str(status))
        self.status = status

    def GetStatus(self) -> Status:
        return self.status

    def __repr__(self) -> str:
        return f"<tkrzw.StatusException: {self.status}>"


_CODES = {
    _kuradb.NotFoundError: Status.NOT_FOUND_ERROR,
    _kuradb.DuplicationError: Status.DUPLICATION_ERROR,
    _kuradb.InvalidArgumentError: Status.INVALID_ARGUMENT_ERROR,
    _kuradb.InfeasibleError: Status.INFEASIBLE_ERROR,
    _kuradb.BrokenDataError: Status.BROKEN_DATA_ERROR,
    _kuradb.WouldBlockError: Status.INFEASIBLE_ERROR,
    _kuradb.OperatingSystemError: Status.SYSTEM_ERROR,
    _kuradb.UnsupportedError: Status.NOT_IMPLEMENTED_ERROR,
    _kuradb.CanceledError: Status.CANCELED_ERROR,
}
_SUCCESS = Status()
_NOT_OPENED = "invalid arguments: not opened database"


def _status_of(error: BaseException) -> Status:
    if isinstance(error, _kuradb.Error):
        message = str(error)
        name, _, rest = message.partition(": ")
        # The code the binding core gives the error's kind, where it came
        # from the native library; else the nearest class that has one.
        code = getattr(error, "status_code", None)
        if code is None:
            code = next((_CODES[c] for c in type(error).__mro__ if c in _CODES), Status.UNKNOWN_ERROR)
        return Status(code, rest or name)
    if isinstance(error, (TypeError, ValueError)):
        return Status(Status.INVALID_ARGUMENT_ERROR, str(error))
    return Status(Status.APPLICATION_ERROR, str(error))


def _report(status: Optional[Status], outcome: Status) -> None:
    if status is not None:
        status.Set(outcome.GetCode(), outcome.GetMessage())


def _bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    return str(data).encode()


def _processor_answer(out: Any, writable: bool) -> Any:
    """What a processor function's result ``out`` does to its record, as the
    reference reads it: nothing for a read-only call, whatever it answers;
    else None keeps the record, False removes it, bytes or str set it, and
    anything else (an int, say) is stored as its str()."""
    if not writable:
        return None
    if out is None or isinstance(out, (bool, bytes, bytearray, memoryview, str)):
        return out
    return str(out)


def _like(value: Optional[bytes], model: Any) -> Optional[Data]:
    """``value`` as str if ``model`` is a str, as the reference returns it."""
    if value is not None and isinstance(model, str):
        return value.decode("utf-8", "replace")
    return value


def _path_of(file: Any) -> str:
    path = file.GetPath() if hasattr(file, "GetPath") else None
    if not isinstance(path, str):
        raise TypeError("the file must be an open tkrzw.File")
    return path


def _params(params: Dict[str, Any]) -> Dict[str, Any]:
    """The reference's rebuild parameters in kuradb's terms, by the binding
    core (the translation the Java and Ruby layers share): ``concurrent``
    goes, colons separate ``access_options``, ``RECORD_COMP_AES`` with
    ``cipher_key`` is kuradb's authenticated encryption, RC4 is refused, the
    tuning of a running database (``fbp_capacity``, ...) goes."""
    return _kuradb._rebuild_params(params)


def _open_params(path: Any, params: Dict[str, Any]) -> Dict[str, Any]:
    """The parameters of an open of `path`, by the binding core: translated
    as ``_params``, waiting for another process's lock unless told
    ``no_wait``, as the reference does (kuradb's own API fails at once);
    without ``key_comparator`` when the open reopens an existing tree, whose
    order the reference reads from its file (kuradb's own API refuses
    another one); ``no_create`` of a missing database raises NotFoundError."""
    return _kuradb._compat_open_params(path, params)


def _flag(name: str, value: Any) -> bool:
    """A true/false parameter as the reference's open takes it: a bool, or
    its text (true, 1, yes, on; false, 0, no, off)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on", ""):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"parameter {name} must be true or false, not {value!r}")


def _shard_params(path: Any, params: Dict[str, Any]) -> Dict[str, Any]:
    """``num_shards`` as the reference reads it: a number below 1 means the
    set that exists at `path`, else a new set of one shard."""
    if "num_shards" not in params:
        return params
    try:
        count = int(params["num_shards"])
    except (TypeError, ValueError):
        return params  # kuradb names the bad value
    if count >= 1:
        return params
    out = dict(params)
    if _kuradb.DBM.shard_count(path) is not None:
        del out["num_shards"]  # kuradb opens an existing set by its files
    else:
        out["num_shards"] = 1
    return out


class DBM(_kuradb._CompatDBM):
    """Polymorphic database manager, as the reference's ``tkrzw.DBM``.

    ``Get``, ``GetStr``, ``Set``, ``Remove`` and the dict protocol
    (``db[key]``, ``db[key] = value``, ``del db[key]``, ``key in db``) are
    the native base's (src/compat.rs): the calls a program makes most cost
    no Python frame, as the reference's C methods do. The open
    ``kuradb.DBM`` is the base's attribute ``_db``.
    """

    ANY_DATA = b"\x00[ANY]\x00"

    def __init__(self) -> None:
        self._db: Optional[_kuradb.DBM] = None
        # Opened with an empty path: on memory, with no file (and whether as
        # a shard set, whose path the reference reports as "" rather than None).
        self._no_file = False
        self._sharded = False
        # Opened writable with sync_hard: a hard synchronization before the close.
        self._sync_hard = False

    @property
    def _open(self) -> _kuradb.DBM:
        if self._db is None:
            raise TypeError(_NOT_OPENED)
        return self._db

    def _call(self, action: Callable[[_kuradb.DBM], Any]) -> Status:
        try:
            action(self._open)
            return Status()
        except (_kuradb.Error, TypeError, ValueError) as e:
            if self._db is None:
                raise
            return _status_of(e)

    def Open(self, path: str, writable: bool, **params: Any) -> Status:
        """Opens a database file; every parameter of the reference is a keyword.
        Raises TypeError if this DBM is open already, as the reference does."""
        if self._db is not None:
            raise TypeError("invalid arguments: opened database")
        try:
            # As in the reference, only a concurrent database lets other
            # threads run during its calls.
            given = dict(params)
            sync_hard = _flag("sync_hard", given.pop("sync_hard", False))
            kept = _shard_params(path, _open_params(path, given))
            self._db = _kuradb.DBM(path, writable, release_gil=bool(params.get("concurrent", False)), **kept)
            self._no_file = len(os.fspath(path)) == 0
            self._sharded = "num_shards" in kept
            self._sync_hard = sync_hard and writable and not self._no_file
            return Status()
        except (_kuradb.Error, TypeError, ValueError) as e:
            return _status_of(e)

    def __enter__(self) -> DBM:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._db is not None:
            self.Close().OrDie()

    def Close(self) -> Status:
        """Closes the database; opened with ``sync_hard``, it first
        synchronizes it with the device, as the reference's close does then."""
        db = self._open
        try:
            try:
                if self._sync_hard:
                    db.synchronize(True)
            finally:
                db.close()
            return Status()
        except _kuradb.Error as e:
            return _status_of(e)
        finally:
            # A close refused (an AsyncDBM still uses the database) leaves it open.
            if not db.is_open():
                self._db = None

    def Process(self, key: Data, func: Callable[[bytes, Optional[bytes]], Any], writable: bool) -> Status:
        """Calls func(key, value or None) under the record's lock: it returns
        None to keep the record, False to remove it, or bytes/str to set it."""
        raw = _bytes(key)

        def call(value: Optional[bytes]) -> Any:
            return _processor_answer(func(raw, value), writable)

        return self._call(lambda db: db.process(raw, call, writable))

    def ProcessMulti(self, key_func_pairs: Any, writable: bool) -> Status:
        """Calls each func(key, value or None) of the (key, func) pairs under
        the records' locks at once, with Process's return convention."""
        def answering(func: Callable[[bytes, Optional[bytes]], Any]) -> Callable[[bytes, Optional[bytes]], Any]:
            return lambda key, value: _processor_answer(func(key, value), writable)

        pairs = [(_bytes(key), answering(func)) for key, func in key_func_pairs]
        return self._call(lambda db: db.process_multi(pairs, writable))

    def GetMulti(self, *keys: Data) -> Dict[bytes, bytes]:
        found = self._open.get_multi([_bytes(k) for k in keys])
        return {k: v for k, v in found.items()}

    def GetMultiStr(self, *keys: Data) -> Dict[str, str]:
        return {k.decode(): v.decode("utf-8", "replace") for k, v in self.GetMulti(*keys).items()}

    def SetMulti(self, overwrite: bool = True, **records: Data) -> Status:
        """Sets the records; without ``overwrite``, as the reference, the
        ones that exist stay (DUPLICATION_ERROR) and the others are set."""
        if overwrite:
            return self._call(lambda db: db.set_multi({_bytes(k): _bytes(v) for k, v in records.items()}, True))
        status = Status()
        for key, value in records.items():
            status.Join(self.Set(key, value, False))
            if status.GetCode() not in (Status.SUCCESS, Status.DUPLICATION_ERROR):
                break
        return status

    def RemoveMulti(self, *keys: Any) -> Status:
        """Removes the records of the keys, given as arguments or as one
        list; NOT_FOUND_ERROR if any is missing (the others are removed)."""
        if len(keys) == 1 and isinstance(keys[0], (list, tuple)):
            keys = tuple(keys[0])

        def remove(db: _kuradb.DBM) -> None:
            wanted = [_bytes(k) for k in keys]
            if db.remove_multi(wanted) < len(set(wanted)):
                raise _kuradb.NotFoundError("not found: some records are missing")

        return self._call(remove)

    def Append(self, key: Data, value: Data, delim: Data = b"") -> Status:
        return self._call(lambda db: db.append(_bytes(key), _bytes(value), _bytes(delim)))

    def CompareExchange(self, key: Data, expected: Optional[Data], desired: Optional[Data]) -> Status:
        def exchange(db: _kuradb.DBM) -> None:
            old = None if expected is None else _bytes(expected)
            new = None if desired is None else _bytes(desired)
            if not db.compare_exchange(_bytes(key), old, new):
                raise _kuradb.InfeasibleError("infeasible: the value does not match")

        return self._call(exchange)

    def AppendMulti(self, delim: Data = "", **records: Data) -> Status:
        """Appends each keyword's value to its record with ``delim`` between
        (or sets it, if there is none), atomically."""
        return self._call(
            lambda db: db.append_multi({_bytes(k): _bytes(v) for k, v in records.items()}, _bytes(delim)))

    def CompareExchangeMulti(self, expected: Any, desired: Any) -> Status:
        """If every (key, value) pair of ``expected`` holds (value None: the
        key is absent), applies every pair of ``desired`` (None: removed),
        atomically; INFEASIBLE_ERROR if any does not hold."""
        def exchange(db: _kuradb.DBM) -> None:
            def pairs(seq: Any) -> List[Tuple[bytes, Optional[bytes]]]:
                return [(_bytes(k), None if v is None else _bytes(v)) for k, v in seq]

            if not db.compare_exchange_multi(pairs(expected), pairs(desired)):
                raise _kuradb.InfeasibleError("infeasible: the values do not match")

        return self._call(exchange)

    def Rekey(self, old_key: Data, new_key: Data, overwrite: bool = True, copying: bool = False) -> Status:
        """Moves the record of ``old_key`` to ``new_key`` atomically (copies it
        with ``copying``): NOT_FOUND_ERROR without an old record,
        DUPLICATION_ERROR if the new key exists and ``overwrite`` is false."""
        return self._call(lambda db: db.rekey(_bytes(old_key), _bytes(new_key), overwrite, copying))

    def ProcessEach(self, func: Callable[[Optional[bytes], Optional[bytes]], Any], writable: bool) -> Status:
        """Calls func(key, value) for every record, with Process's return
        convention, and, as the reference, once before and once after them
        with (None, None), whose result is ignored."""
        def each(db: _kuradb.DBM) -> None:
            func(None, None)

            def call(key: bytes, value: bytes) -> Any:
                out = func(key, value)
                if not writable:
                    # As the reference, a read-only call leaves the record whatever it answers.
                    return None
                if out is None or isinstance(out, (bool, bytes, bytearray, memoryview, str)):
                    return out
                return str(out)

            db.process_each(call, writable)
            func(None, None)

        return self._call(each)

    def GetTimestamp(self) -> Optional[float]:
        """The time the database's file was last modified, in seconds since
        the epoch (kuradb keeps no timestamp of its own: this is the file's
        modification time), or None for an on-memory database and a shard
        set."""
        path = self.GetFilePath()
        if not path:
            return None
        try:
            return os.stat(path).st_mtime
        except OSError:
            return None

    def Increment(
        self, key: Data, inc: int = 1, init: int = 0, status: Optional[Status] = None
    ) -> Optional[int]:
        try:
            value = self._open._increment_as_reference(_bytes(key), inc, init)
        except _kuradb.Error as e:
            _report(status, _status_of(e))
            return None
        _report(status, _SUCCESS)
        return value

    def Count(self) -> Optional[int]:
        return self._open.count()

    def GetFileSize(self) -> Optional[int]:
        db = self._open
        return None if self._no_file else db.file_size()

    def GetFilePath(self) -> Optional[str]:
        db = self._open
        if self._no_file and not self._sharded:
            return None
        return str(db.path())

    def Clear(self) -> Status:
        return self._call(lambda db: db.clear())

    def Rebuild(self, **params: Any) -> Status:
        return self._call(lambda db: db.rebuild(**_params(params)))

    def ShouldBeRebuilt(self) -> Optional[bool]:
        return self._open.should_be_rebuilt()

    def Synchronize(self, hard: bool, **params: Any) -> Status:
        return self._call(lambda db: db.synchronize(hard, {k: str(v) for k, v in params.items()}))

    def CopyFileData(self, dest_path: str, sync_hard: bool = False) -> Status:
        if self._db is not None and self._no_file:
            return Status(Status.PRECONDITION_ERROR, "the database has no file: it was opened with an empty path")
        return self._call(lambda db: db.copy_file_data(dest_path, sync_hard))

    def Export(self, dest_dbm: DBM) -> Status:
        return self._call(lambda db: db.export(dest_dbm._open))

    def SetAndGet(self, key: Data, value: Data, overwrite: bool = True) -> Tuple[Status, Optional[Data]]:
        """Sets a record and returns (status, old value or None); the old value
        is str if ``value`` is. DUPLICATION_ERROR (with the value that stays)
        if the record exists and ``overwrite`` is false."""
        try:
            old = self._open.set_and_get(_bytes(key), _bytes(value), overwrite)
        except (_kuradb.Error, TypeError, ValueError) as e:
            return _status_of(e), None
        status = Status(Status.DUPLICATION_ERROR) if old is not None and not overwrite else Status()
        return status, _like(old, value)

    def RemoveAndGet(self, key: Data) -> Tuple[Status, Optional[Data]]:
        """Removes a record and returns (status, its value); NOT_FOUND_ERROR
        and None if absent. The value is str if ``key`` is."""
        try:
            old = self._open.remove_and_get(_bytes(key))
        except (_kuradb.Error, TypeError, ValueError) as e:
            return _status_of(e), None
        return (Status() if old is not None else Status(Status.NOT_FOUND_ERROR)), _like(old, key)

    def CompareExchangeAndGet(
        self, key: Data, expected: Optional[Data], desired: Optional[Data]
    ) -> Tuple[Status, Optional[Data]]:
        """CompareExchange that also returns the value before (None: absent),
        str if ``expected`` or ``desired`` is; INFEASIBLE_ERROR if it did not match."""
        old_arg = None if expected is None else _bytes(expected)
        new_arg = None if desired is None else _bytes(desired)
        try:
            done, old = self._open.compare_exchange_and_get(_bytes(key), old_arg, new_arg)
        except (_kuradb.Error, TypeError, ValueError) as e:
            return _status_of(e), None
        text = isinstance(expected, str) or isinstance(desired, str)
        if old is not None and text:
            old = old.decode("utf-8", "replace")
        return (Status() if done else Status(Status.INFEASIBLE_ERROR)), old

    def ProcessFirst(self, func: Callable[[bytes, bytes], Any], writable: bool) -> Status:
        """Calls func(key, value) on the first record, with Process's return
        convention; NOT_FOUND_ERROR if the database is empty."""
        def shown(key: bytes, value: bytes) -> Any:
            out = func(key, value)
            # As the reference, a read-only call leaves the record whatever it answers.
            return out if writable else None

        def first(db: _kuradb.DBM) -> None:
            if not db.process_first(shown, writable):
                raise _kuradb.NotFoundError("not found: no record")

        return self._call(first)

    def PopFirst(self, status: Optional[Status] = None) -> Optional[Tuple[bytes, bytes]]:
        """Removes the first record and returns (key, value); None and
        NOT_FOUND_ERROR if the database is empty."""
        try:
            record = self._open.pop_first()
        except _kuradb.Error as e:
            _report(status, _status_of(e))
            return None
        _report(status, _SUCCESS if record is not None else Status(Status.NOT_FOUND_ERROR))
        return record

    def PopFirstStr(self, status: Optional[Status] = None) -> Optional[Tuple[str, str]]:
        record = self.PopFirst(status)
        if record is None:
            return None
        return record[0].decode("utf-8", "replace"), record[1].decode("utf-8", "replace")

    def PushLast(self, value: Data, wtime: Optional[float] = None) -> Status:
        """Adds a record keyed by the time ``wtime`` (None: now), 8 big-endian
        bytes of 10 ns units, the next free one if taken."""
        return self._call(lambda db: db.push_last(_bytes(value), wtime))

    def Search(self, mode: str, pattern: Data, capacity: int = 0) -> List[str]:
        """The keys matching ``pattern`` in ``mode``, as str; raises
        StatusException for an unknown mode or a bad pattern."""
        try:
            keys = self._open.search(mode, _bytes(pattern), capacity)
        except _kuradb.Error as e:
            raise StatusException(_status_of(e)) from None
        return [k.decode("utf-8", "replace") for k in keys]

    def ExportToFlatRecords(self, dest_file: Any) -> Status:
        """Writes every record to ``dest_file`` (a File, emptied first) as flat records."""
        return self._call(lambda db: db.export_to_flat_records(_path_of(dest_file)))

    def ImportFromFlatRecords(self, src_file: Any) -> Status:
        """Sets every record of the flat records in ``src_file`` (a File)."""
        return self._call(lambda db: db.import_from_flat_records(_path_of(src_file)))

    def ExportKeysAsLines(self, dest_file: Any) -> Status:
        """Writes every key and a line feed to ``dest_file`` (a File, emptied first)."""
        return self._call(lambda db: db.export_keys_as_lines(_path_of(dest_file)))

    def Inspect(self) -> Dict[str, str]:
        """kuradb's figures, with "class" the reference's class name."""
        figures = self._open.inspect()
        figures["class"] = self._class_name()
        return figures

    def IsOpen(self) -> bool:
        return self._db is not None

    def IsWritable(self) -> bool:
        # As the reference's, an on-memory database without a file says
        # False: it has no file open for writing (it takes writes all the same).
        db = self._open
        return not self._no_file and db.inspect().get("file_writable", "true") == "true"

    def IsHealthy(self) -> bool:
        return self._open.is_healthy()

    def IsOrdered(self) -> bool:
        return self._open.is_ordered()

    def MakeIterator(self) -> Iterator:
        return Iterator(self)

    def _class_name(self) -> str:
        name = self._open.dbm_class()
        return _CLASS_NAMES.get(name, name)

    def __len__(self) -> int:
        # As the reference: an unopened database has no records.
        return 0 if self._db is None else self._open.count()

    def __iter__(self) -> _PyIterator[Tuple[bytes, bytes]]:
        return iter(self._open.items())

    def _shown_path(self) -> str:
        path = self.GetFilePath()
        return "-" if path is None else path

    def __repr__(self) -> str:
        if self._db is None:
            return "<tkrzw.DBM: unopened>"
        return f"<tkrzw.DBM: class={self._class_name()} path={self._shown_path()} num_records={len(self._db)}>"

    def __str__(self) -> str:
        if self._db is None:
            return "unopened"
        return f"{self._class_name()}:{self._shown_path()}:{len(self._db)}"

    @staticmethod
    def RestoreDatabase(old_file_path: str, new_file_path: str, class_name: Optional[str] = "",
                        end_offset: Optional[int] = -1, cipher_key: Optional[Data] = "") -> Status:
        """Restores the broken database at ``old_file_path`` into a new one at
        ``new_file_path``. ``class_name`` (empty: from the file's header or
        extension) names the class; a positive ``end_offset`` restores a hash
        database in appending mode as it was when its file ended there (0 or
        negative: every record that can be read); ``cipher_key`` opens an
        encrypted database. A new path holding a non-empty file answers
        PRECONDITION_ERROR, as the reference does, rather than writing over it."""
        params: Dict[str, Any] = {}
        if class_name:
            params["dbm"] = class_name
        if end_offset is not None and end_offset > 0:
            params["end_offset"] = end_offset
        if cipher_key:
            params["cipher_key"] = cipher_key
        try:
            new = os.fspath(new_file_path)
            if os.path.isfile(new) and os.path.getsize(new) > 0:
                return Status(Status.PRECONDITION_ERROR, "the new database is not empty")
            _kuradb.DBM.restore(old_file_path, new, **params)
        except (_kuradb.Error, TypeError, ValueError) as e:
            return _status_of(e)
        return Status()


class Iterator:
    """A cursor over a DBM's records, as the reference's ``tkrzw.Iterator``."""

    def __init__(self, dbm: DBM) -> None:
        self._cursor = dbm._open.make_iterator()

    def _call(self, action: Callable[[_kuradb.Iterator], Any], located: bool = False) -> Status:
        try:
            if located and self._cursor.get_key() is None:
                return Status(Status.NOT_FOUND_ERROR)
            action(self._cursor)
            return Status()
        except _kuradb.Error as e:
            return _status_of(e)

    def First(self) -> Status:
        return self._call(lambda c: c.first())

    def Last(self) -> Status:
        return self._call(lambda c: c.last())

    def Jump(self, key: Data) -> Status:
        return self._call(lambda c: c.jump(_bytes(key)))

    def JumpLower(self, key: Data, inclusive: bool = False) -> Status:
        return self._call(lambda c: c.jump_lower(_bytes(key), inclusive))

    def JumpUpper(self, key: Data, inclusive: bool = False) -> Status:
        return self._call(lambda c: c.jump_upper(_bytes(key), inclusive))

    def Next(self) -> Status:
        return self._call(lambda c: c.next(), located=True)

    def Previous(self) -> Status:
        return self._call(lambda c: c.previous(), located=True)

    def Get(self, status: Optional[Status] = None) -> Optional[Tuple[bytes, bytes]]:
        try:
            record = self._cursor.get()
        except _kuradb.Error as e:
            _report(status, _status_of(e))
            return None
        _report(status, _SUCCESS if record is not None else Status(Status.NOT_FOUND_ERROR))
        return record

    def GetStr(self, status: Optional[Status] = None) -> Optional[Tuple[str, str]]:
        record = self.Get(status)
        return None if record is None else (record[0].decode("utf-8", "replace"), record[1].decode("utf-8", "replace"))

    def GetKey(self, status: Optional[Status] = None) -> Optional[bytes]:
        record = self.Get(status)
        return None if record is None else record[0]

    def GetKeyStr(self, status: Optional[Status] = None) -> Optional[str]:
        key = self.GetKey(status)
        return None if key is None else key.decode("utf-8", "replace")

    def GetValue(self, status: Optional[Status] = None) -> Optional[bytes]:
        record = self.Get(status)
        return None if record is None else record[1]

    def GetValueStr(self, status: Optional[Status] = None) -> Optional[str]:
        value = self.GetValue(status)
        return None if value is None else value.decode("utf-8", "replace")

    def Step(self, status: Optional[Status] = None) -> Optional[Tuple[bytes, bytes]]:
        """The record at the cursor, moving past it."""
        record = self.Get(status)
        if record is not None:
            self._cursor.next()
        return record

    def StepStr(self, status: Optional[Status] = None) -> Optional[Tuple[str, str]]:
        record = self.Step(status)
        return None if record is None else (record[0].decode("utf-8", "replace"), record[1].decode("utf-8", "replace"))

    def __iter__(self) -> Iterator:
        return self

    def __next__(self) -> Tuple[bytes, bytes]:
        """The current record, then moves to the next: the iterator protocol
        from wherever the iterator stands (``for k, v in it`` after First)."""
        record = self.Step()
        if record is None:
            raise StopIteration
        return record

    def Set(self, value: Data) -> Status:
        return self._call(lambda c: c.set(_bytes(value)), located=True)

    def Remove(self) -> Status:
        return self._call(lambda c: c.remove(), located=True)

    def __repr__(self) -> str:
        key = self._cursor.get_key()
        return f"<tkrzw.Iterator: {'(unlocated)' if key is None else key!r}>"

    def __str__(self) -> str:
        key = self._cursor.get_key()
        return "(unlocated)" if key is None else key.decode("utf-8", "replace")


# Last: the asynchronous adapter is written on top of the names above.
from ._tkrzw_async import AsyncDBM, Future  # noqa: E402
from ._tkrzw_index import Index, IndexIterator  # noqa: E402
from ._tkrzw_file import File  # noqa: E402
from ._tkrzw_utility import Utility  # noqa: E402
