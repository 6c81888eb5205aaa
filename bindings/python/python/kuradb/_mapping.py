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

``DBM.run`` and the ``transactional`` decorator run a function in a
transaction and run it again in a new one when its commit raises
``ConflictError``.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import random
import time
from collections.abc import ItemsView, KeysView, MutableMapping, ValuesView
from typing import Any, Callable, Iterator, Tuple, TypeVar

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

    def run(self, func: Callable[[_kuradb.Transaction], _T], retries: int = 10, durability: str = "os") -> _T:
        """Calls ``func(tx)`` with a new transaction and commits it (unless
        ``func`` finished it), answering what ``func`` answered. When the
        commit (or a read) raises ``ConflictError``, waits a short random
        time and runs ``func`` again in a new transaction, at most
        ``retries`` more times; then the ConflictError goes on. Any other
        exception aborts the transaction and goes on at once."""
        return _run(self, func, retries, durability)


_T = TypeVar("_T")


def _check_retries(retries: int) -> None:
    if retries < 0:
        raise ValueError(f"retries must be 0 or more, not {retries}")


def _backoff(attempt: int) -> float:
    """Seconds to wait before try ``attempt + 1``: a little, more after each
    conflict, so that contenders spread out instead of meeting again."""
    return random.uniform(0, 0.0005 * (1 << min(attempt, 8)))


def _run(db: Any, func: Callable[[Any], _T], retries: int, durability: str) -> _T:
    _check_retries(retries)
    attempt = 0
    while True:
        tx = db.transaction(durability)
        try:
            result = func(tx)
            if tx.active:
                tx.commit()
            return result
        except _kuradb.ConflictError:
            if attempt >= retries:
                raise
            attempt += 1
        finally:
            tx.abort()
        time.sleep(_backoff(attempt))


async def _run_async(adbm: Any, func: Callable[[Any], Any], retries: int, durability: str) -> Any:
    """``AsyncDBM.run``: ``DBM.run`` for an AsyncDBM, awaiting ``func(tx)``
    if it answers an awaitable and sleeping on the event loop between tries."""
    _check_retries(retries)
    attempt = 0
    while True:
        tx = adbm.transaction(durability)
        try:
            result = func(tx)
            if inspect.isawaitable(result):
                result = await result
            if tx.active:
                await tx.commit()
            return result
        except _kuradb.ConflictError:
            if attempt >= retries:
                raise
            attempt += 1
        finally:
            if tx.active:
                await tx.abort()
        await asyncio.sleep(_backoff(attempt))


def transactional(db: Any, retries: int = 10, durability: str = "os") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator: the function, called with its arguments, gets a new
    transaction of ``db`` as its first argument, is committed, and is run
    again in a new transaction on ``ConflictError`` (``DBM.run``)::

        @kuradb.transactional(db, retries=10)
        def transfer(tx, source, dest, amount):
            tx[source] = str(int(tx[source]) - amount)
            tx[dest] = str(int(tx[dest]) + amount)

        transfer(b"alice", b"bob", 30)

    With an ``AsyncDBM`` (``AsyncDBM.run``) the decorated function is a
    coroutine function, to be awaited; the function decorated may be an
    ``async def`` (it gets an ``AsyncTransaction``) or a plain one::

        @kuradb.transactional(adbm)
        async def transfer(tx, source, dest, amount):
            await tx.set(source, str(int(await tx.get(source)) - amount))
            ...

        await transfer(b"alice", b"bob", 30)
    """
    from . import AsyncDBM

    is_async = isinstance(db, AsyncDBM)

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(func) and not is_async:
            raise TypeError(
                f"kuradb.transactional: {func.__qualname__} is an async function, but {type(db).__name__} "
                "is not an AsyncDBM; decorate it with an AsyncDBM, or make it a plain function"
            )
        if is_async:

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                return await _run_async(db, lambda tx: func(tx, *args, **kwargs), retries, durability)

            return async_wrapper

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return _run(db, lambda tx: func(tx, *args, **kwargs), retries, durability)

        return wrapper

    return decorate
