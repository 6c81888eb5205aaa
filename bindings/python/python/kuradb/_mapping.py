"""``kuradb.DBM``: the native database class made a
``collections.abc.MutableMapping``.

The native class (``kuradb._kuradb.DBM``) does the work; this subclass adds
what the mapping protocol promises on top: ``keys()``, ``values()`` and
``items()`` are views (``len``, ``in``, iteration, set operations on keys
and items) rather than one-shot iterators, ``popitem`` removes the first
record atomically, and ``isinstance(db, MutableMapping)`` holds.

A database compares and hashes by identity, not by content: comparing two
databases record by record would read both files whole, and a database is
a handle to a file (as a file object is), not a value.
"""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, MutableMapping, ValuesView
from typing import Iterator, Tuple

from . import _kuradb


class _Keys(KeysView):  # type: ignore[type-arg]
    """The keys of a database: iterating reads them in the database's order."""

    __slots__ = ()

    def __iter__(self) -> Iterator[bytes]:
        return _kuradb.DBM.keys(self._mapping)

    def __repr__(self) -> str:
        return f"kuradb.DBM.keys({self._mapping!r})"


class _Values(ValuesView):  # type: ignore[type-arg]
    """The values of a database, in the order of its keys."""

    __slots__ = ()

    def __iter__(self) -> Iterator[bytes]:
        return _kuradb.DBM.values(self._mapping)

    def __repr__(self) -> str:
        return f"kuradb.DBM.values({self._mapping!r})"


class _Items(ItemsView):  # type: ignore[type-arg]
    """The ``(key, value)`` pairs of a database."""

    __slots__ = ()

    def __contains__(self, item: object) -> bool:
        # One lookup instead of the mixin's two.
        if not isinstance(item, tuple) or len(item) != 2:
            return False
        key, value = item
        found = self._mapping.get(key)
        if found is None:
            return False
        wanted = value.encode() if isinstance(value, str) else value
        return found == wanted

    def __iter__(self) -> Iterator[Tuple[bytes, bytes]]:
        return _kuradb.DBM.items(self._mapping)

    def __repr__(self) -> str:
        return f"kuradb.DBM.items({self._mapping!r})"


class DBM(_kuradb.DBM, MutableMapping):  # type: ignore[misc,type-arg]
    __doc__ = _kuradb.DBM.__doc__

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__

    def keys(self) -> _Keys:  # type: ignore[override]
        """A view of the keys: ``len``, ``in``, iteration in the database's order."""
        return _Keys(self)

    def values(self) -> _Values:  # type: ignore[override]
        """A view of the values, in the order of their keys."""
        return _Values(self)

    def items(self) -> _Items:  # type: ignore[override]
        """A view of the ``(key, value)`` pairs."""
        return _Items(self)

    def popitem(self) -> Tuple[bytes, bytes]:
        """Removes the first record (in the database's order) and answers
        ``(key, value)``, atomically; KeyError if the database is empty."""
        record = self.pop_first()
        if record is None:
            raise KeyError("popitem(): the database is empty")
        return record
