"""``Index`` and ``IndexIterator`` of the reference's Python module over
``kuradb.Index``; ``kuradb.compat.tkrzw`` re-exports them.

``Open(path, writable, **params)`` opens a file index (a tree file of
pairs) or, with an empty path, one in memory, as the reference's does;
``key_comparator`` takes the reference's pair comparators
(``"PairLexicalKeyComparator"``, ``"PairDecimalKeyComparator"``, …).
Methods return a ``Status`` where the reference's do; ``Remove`` of a pair
that is not there is ``NOT_FOUND_ERROR``. Using an index that is not open
raises ``TypeError``, as the reference's module does for a DBM. The files
are kuradb's tree files, not the reference's.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator as _PyIterator, List, Optional, Tuple, Union

from .. import _kuradb
from .tkrzw import Data, Status, _bytes, _open_params, _status_of

__all__ = ["Index", "IndexIterator"]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


class Index:
    """Secondary index, as the reference's ``tkrzw.Index``."""

    def __init__(self) -> None:
        self._index: Optional[_kuradb.Index] = None

    @property
    def _open(self) -> _kuradb.Index:
        if self._index is None:
            raise TypeError("invalid arguments: not opened index")
        return self._index

    def _call(self, action: Callable[[_kuradb.Index], Any]) -> Status:
        try:
            action(self._open)
            return Status()
        except _kuradb.Error as e:
            return _status_of(e)

    def Open(self, path: Union[str, bytes, "os.PathLike[str]"], writable: bool, **params: Any) -> Status:
        """Opens the index file at path (str, bytes or os.PathLike), or an
        index in memory if path is empty."""
        if self._index is not None:
            return Status(Status.PRECONDITION_ERROR, "opened index")
        try:
            self._index = _kuradb.Index(path, writable, **_open_params(path, params))
            return Status()
        except (_kuradb.Error, TypeError) as e:
            return _status_of(e)

    def Close(self) -> Status:
        index = self._open
        self._index = None
        try:
            index.close()
            return Status()
        except _kuradb.Error as e:
            return _status_of(e)

    def Check(self, key: Data, value: Data) -> bool:
        return self._open.check(_bytes(key), _bytes(value))

    def GetValues(self, key: Data, max: int = 0) -> List[bytes]:
        return self._open.get_values(_bytes(key), max)

    def GetValuesStr(self, key: Data, max: int = 0) -> List[str]:
        return [_text(v) for v in self.GetValues(key, max)]

    def Add(self, key: Data, value: Data) -> Status:
        return self._call(lambda i: i.add(_bytes(key), _bytes(value)))

    def Remove(self, key: Data, value: Data) -> Status:
        def remove(index: _kuradb.Index) -> None:
            if not index.discard(_bytes(key), _bytes(value)):
                raise _kuradb.NotFoundError("no such record")

        return self._call(remove)

    def GetFilePath(self) -> Optional[str]:
        """The path of the index's file ("" for one in memory), or None if
        the index is not open."""
        if self._index is None:
            return None
        return str(self._index.path())

    def Count(self) -> int:
        return self._open.count()

    def Clear(self) -> Status:
        return self._call(lambda i: i.clear())

    def Rebuild(self) -> Status:
        return self._call(lambda i: i.rebuild())

    def Synchronize(self, hard: bool) -> Status:
        return self._call(lambda i: i.synchronize(hard))

    def IsOpen(self) -> bool:
        return self._index is not None

    def IsWritable(self) -> bool:
        return self._index is not None and self._index.is_writable()

    def MakeIterator(self) -> IndexIterator:
        return IndexIterator(self)

    def __len__(self) -> int:
        return self._open.count()

    def __contains__(self, record: Tuple[Data, Data]) -> bool:
        key, value = record
        return self.Check(key, value)

    def __iter__(self) -> _PyIterator[Tuple[bytes, bytes]]:
        it = self.MakeIterator()
        it.First()
        return it

    def __repr__(self) -> str:
        if self._index is None:
            return "<tkrzw.Index: unopened>"
        return f"<tkrzw.Index: path={self._index.path()} num_records={len(self._index)}>"

    def __str__(self) -> str:
        if self._index is None:
            return "unopened"
        return f"path={self._index.path()} num_records={len(self._index)}"


class IndexIterator:
    """A cursor over an Index's pairs, as the reference's ``tkrzw.IndexIterator``."""

    def __init__(self, index: Index) -> None:
        self._cursor = index._open.make_iterator()

    def First(self) -> None:
        self._cursor.first()

    def Last(self) -> None:
        self._cursor.last()

    def Jump(self, key: Data, value: Data = b"") -> None:
        self._cursor.jump(_bytes(key), _bytes(value))

    def Next(self) -> None:
        self._cursor.next()

    def Previous(self) -> None:
        self._cursor.previous()

    def Get(self) -> Optional[Tuple[bytes, bytes]]:
        return self._cursor.get()

    def GetStr(self) -> Optional[Tuple[str, str]]:
        pair = self.Get()
        return None if pair is None else (_text(pair[0]), _text(pair[1]))

    def __iter__(self) -> IndexIterator:
        return self

    def __next__(self) -> Tuple[bytes, bytes]:
        pair = self.Get()
        if pair is None:
            raise StopIteration
        self.Next()
        return pair

    def __repr__(self) -> str:
        pair = self._cursor.get()
        return f"<tkrzw.IndexIterator: {'(unlocated)' if pair is None else pair!r}>"

    def __str__(self) -> str:
        pair = self._cursor.get()
        return "(unlocated)" if pair is None else f"{_text(pair[0])}:{_text(pair[1])}"
