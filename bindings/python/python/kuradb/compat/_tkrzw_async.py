"""``AsyncDBM`` and ``Future`` of the reference's Python module over
``kuradb.AsyncDBM``; ``kuradb.compat.tkrzw`` re-exports them.

Each method queues its operation at once and returns a ``Future`` whose
``Get()`` answers what the reference's does: the ``Status`` alone, or a
``(Status, value)`` pair for Get, GetStr, GetMulti, GetMultiStr, Increment
and Search (the keys as str), a ``(Status, key, value)`` triple for PopFirst
and PopFirstStr. ``Wait(timeout)`` blocks up to ``timeout`` seconds (negative: no
limit). ``await future`` waits without blocking the event loop and answers
what ``Get()`` answers; ``Get()`` may be called again afterwards (the
reference frees the future at ``Get()``, so a program written for it never
does).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Generator, List, Optional, Tuple

from .. import _kuradb
from .tkrzw import DBM, Data, Status, _bytes, _params, _path_of, _status_of

__all__ = ["AsyncDBM", "Future"]



def _text(value: Optional[bytes]) -> Optional[str]:
    return None if value is None else value.decode("utf-8", "replace")


def _only_status(value: Any) -> Status:
    return Status()


def _found(value: Optional[bytes]) -> Tuple[Status, Optional[bytes]]:
    return (Status(), value) if value is not None else (Status(Status.NOT_FOUND_ERROR), None)


def _popped(record: Optional[Tuple[Any, Any]]) -> Tuple[Status, Any, Any]:
    if record is None:
        return Status(Status.NOT_FOUND_ERROR), None, None
    return Status(), record[0], record[1]


class Future:
    """The result of an AsyncDBM operation, as the reference's ``tkrzw.Future``."""

    def __init__(
        self,
        inner: Optional[_kuradb.Future],
        ok: Callable[[Any], Any],
        failed: Callable[[Status], Any],
        refused: Optional[Status] = None,
    ) -> None:
        self._inner = inner
        self._ok = ok
        self._failed = failed
        self._refused = refused

    def Wait(self, timeout: float = -1) -> bool:
        """Waits until the operation has run, up to ``timeout`` seconds
        (negative: no limit); answers whether it has."""
        if self._inner is None:
            return True
        return self._inner.wait(None if timeout < 0 else timeout)

    def Get(self) -> Any:
        """Waits until the operation has run; answers its Status, or a
        (Status, value) pair for the operations that read."""
        if self._inner is None:
            return self._failed(self._refused or Status(Status.UNKNOWN_ERROR))
        try:
            value = self._inner.get()
        except _kuradb.Error as e:
            return self._failed(_status_of(e))
        return self._ok(value)

    def __await__(self) -> Generator[Any, None, Any]:
        if self._inner is None:
            return self.Get()
        try:
            value = yield from self._inner.__await__()
        except _kuradb.Error as e:
            return self._failed(_status_of(e))
        return self._ok(value)

    def __repr__(self) -> str:
        done = self._inner is None or self._inner.done()
        return f"<tkrzw.Future: {'done' if done else 'pending'}>"

    def __str__(self) -> str:
        return repr(self)


class AsyncDBM:
    """An opened DBM behind a pool of worker threads, as the reference's
    ``tkrzw.AsyncDBM``: every method returns a Future at once. Destruct()
    runs every queued operation before it returns; the DBM cannot close
    while an AsyncDBM on it is alive."""

    def __init__(self, dbm: DBM, num_worker_threads: int) -> None:
        self._adb: Optional[_kuradb.AsyncDBM] = _kuradb.AsyncDBM(dbm._open, num_worker_threads)

    def _queue(
        self,
        start: Callable[[_kuradb.AsyncDBM], _kuradb.Future],
        ok: Callable[[Any], Any] = _only_status,
        failed: Callable[[Status], Any] = lambda status: status,
    ) -> Future:
        try:
            if self._adb is None:
                raise _kuradb.InfeasibleError("infeasible: the AsyncDBM is destructed")
            return Future(start(self._adb), ok, failed)
        except _kuradb.Error as e:
            return Future(None, ok, failed, _status_of(e))

    def Destruct(self) -> None:
        """Waits until every queued operation has run, then stops the workers."""
        if self._adb is not None:
            self._adb.close()
            self._adb = None

    def __del__(self) -> None:
        self.Destruct()

    def Get(self, key: Data) -> Future:
        return self._queue(lambda a: a.get(_bytes(key)), _found, lambda s: (s, None))

    def GetStr(self, key: Data) -> Future:
        def ok(value: Optional[bytes]) -> Tuple[Status, Optional[str]]:
            status, found = _found(value)
            return status, _text(found)

        return self._queue(lambda a: a.get(_bytes(key)), ok, lambda s: (s, None))

    def GetMulti(self, *keys: Data) -> Future:
        wanted = [_bytes(k) for k in keys]

        def ok(found: Dict[bytes, bytes]) -> Tuple[Status, Dict[bytes, bytes]]:
            complete = len(found) == len(set(wanted))
            return (Status() if complete else Status(Status.NOT_FOUND_ERROR)), found

        return self._queue(lambda a: a.get_multi(wanted), ok, lambda s: (s, {}))

    def GetMultiStr(self, *keys: Data) -> Future:
        wanted = [_bytes(k) for k in keys]

        def ok(found: Dict[bytes, bytes]) -> Tuple[Status, Dict[str, str]]:
            complete = len(found) == len(set(wanted))
            text = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in found.items()}
            return (Status() if complete else Status(Status.NOT_FOUND_ERROR)), text

        return self._queue(lambda a: a.get_multi(wanted), ok, lambda s: (s, {}))

    def Set(self, key: Data, value: Data, overwrite: bool = True) -> Future:
        return self._queue(lambda a: a.set(_bytes(key), _bytes(value), overwrite))

    def SetMulti(self, overwrite: bool = True, **records: Data) -> Future:
        """Sets the records; without ``overwrite``, as the reference, the
        ones that exist stay (DUPLICATION_ERROR) and the others are set."""
        pairs = {_bytes(k): _bytes(v) for k, v in records.items()}
        if overwrite:
            return self._queue(lambda a: a.set_multi(pairs, True))

        def ok(kept: List[bytes]) -> Status:
            return Status(Status.DUPLICATION_ERROR) if kept else Status()

        return self._queue(lambda a: a._set_absent_multi(pairs), ok)

    def Remove(self, key: Data) -> Future:
        def ok(existed: bool) -> Status:
            return Status() if existed else Status(Status.NOT_FOUND_ERROR)

        return self._queue(lambda a: a.remove(_bytes(key)), ok)

    def RemoveMulti(self, *keys: Any) -> Future:
        """Removes the records of the keys, given as arguments (the current
        reference) or as one list or tuple (its older releases)."""
        if len(keys) == 1 and isinstance(keys[0], (list, tuple)):
            keys = tuple(keys[0])
        wanted = [_bytes(k) for k in keys]

        def ok(removed: int) -> Status:
            return Status() if removed == len(set(wanted)) else Status(Status.NOT_FOUND_ERROR)

        return self._queue(lambda a: a.remove_multi(wanted), ok)

    def Append(self, key: Data, value: Data, delim: Data = "") -> Future:
        return self._queue(lambda a: a.append(_bytes(key), _bytes(value), _bytes(delim)))

    def AppendMulti(self, delim: Data = "", **records: Data) -> Future:
        pairs = {_bytes(k): _bytes(v) for k, v in records.items()}
        return self._queue(lambda a: a.append_multi(pairs, _bytes(delim)))

    def CompareExchange(self, key: Data, expected: Optional[Data], desired: Optional[Data]) -> Future:
        old = None if expected is None else _bytes(expected)
        new = None if desired is None else _bytes(desired)

        def ok(done: bool) -> Status:
            return Status() if done else Status(Status.INFEASIBLE_ERROR)

        return self._queue(lambda a: a.compare_exchange(_bytes(key), old, new), ok)

    def Increment(self, key: Data, inc: int = 1, init: int = 0) -> Future:
        """As the reference's: a stored value of any length counts from its
        first 8 bytes, big-endian (INT64MIN reads without changing)."""
        return self._queue(
            lambda a: a._increment_as_reference(_bytes(key), inc, init),
            lambda n: (Status(), n),
            lambda s: (s, None),
        )

    def CompareExchangeMulti(
        self, expected: List[Tuple[Data, Optional[Data]]], desired: List[Tuple[Data, Optional[Data]]]
    ) -> Future:
        def pairs(items: List[Tuple[Data, Optional[Data]]]) -> List[Tuple[bytes, Optional[bytes]]]:
            return [(_bytes(k), None if v is None else _bytes(v)) for k, v in items]

        def ok(done: bool) -> Status:
            return Status() if done else Status(Status.INFEASIBLE_ERROR)

        old, new = pairs(expected), pairs(desired)
        return self._queue(lambda a: a.compare_exchange_multi(old, new), ok)

    def Rekey(self, old_key: Data, new_key: Data, overwrite: bool = True, copying: bool = False) -> Future:
        return self._queue(lambda a: a.rekey(_bytes(old_key), _bytes(new_key), overwrite, copying))

    def Clear(self) -> Future:
        return self._queue(lambda a: a.clear())

    def Rebuild(self, **params: Any) -> Future:
        return self._queue(lambda a: a.rebuild(**_params(params)))

    def Synchronize(self, hard: bool, **params: Any) -> Future:
        return self._queue(lambda a: a.synchronize(hard, {k: str(v) for k, v in params.items()}))

    def PopFirst(self) -> Future:
        """Removes the first record: (Status, key, value) as bytes, or
        (NOT_FOUND_ERROR, None, None) if the database is empty."""
        return self._queue(lambda a: a.pop_first(), _popped, lambda status: (status, None, None))

    def PopFirstStr(self) -> Future:
        """PopFirst with the key and the value as str."""
        return self._queue(lambda a: a.pop_first(True), _popped, lambda status: (status, None, None))

    def PushLast(self, value: Data, wtime: Optional[float] = None) -> Future:
        """Stores ``value`` under a key made from the time ``wtime`` (None:
        now), as DBM.PushLast does."""
        return self._queue(lambda a: a.push_last(_bytes(value), wtime))

    def Search(self, mode: str, pattern: Data, capacity: int = 0) -> Future:
        """(Status, the keys matching ``pattern`` in ``mode`` as str), as
        DBM.Search finds them; (the error, []) for an unknown mode."""
        def start(a: _kuradb.AsyncDBM) -> _kuradb.Future:
            return a.search(mode, _bytes(pattern), capacity)

        return self._queue(
            start, lambda keys: (Status(), [k.decode("utf-8", "replace") for k in keys]),
            lambda status: (status, []))

    def ExportToFlatRecords(self, dest_file: Any) -> Future:
        """Writes every record to ``dest_file`` (a File, emptied first) as
        flat records."""
        return self._queue(lambda a: a.export_to_flat_records(_path_of(dest_file)))

    def ImportFromFlatRecords(self, src_file: Any) -> Future:
        """Sets every record of the flat records in ``src_file`` (a File)."""
        return self._queue(lambda a: a.import_from_flat_records(_path_of(src_file)))

    def CopyFileData(self, dest_path: str, sync_hard: bool = False) -> Future:
        return self._queue(lambda a: a.copy_file_data(dest_path, sync_hard))

    def Export(self, dest_dbm: DBM) -> Future:
        return self._queue(lambda a: a.export(dest_dbm._open))

    def __repr__(self) -> str:
        return f"<tkrzw.AsyncDBM: {'destructed' if self._adb is None else 'open'}>"

    def __str__(self) -> str:
        return repr(self)
