"""The standard library's dbm interface over kuradb.

Code written for ``dbm.gnu`` works unchanged, and ``shelve.Shelf`` takes the
object ``open`` returns::

    import shelve
    import kuradb.dbm

    with shelve.Shelf(kuradb.dbm.open("/tmp/shelf.kh", "c")) as shelf:
        shelf["fruits"] = ["apple", "pear"]

``open(file, flag="r", mode=0o666)`` takes the flags of ``dbm.gnu``:

- ``r``: open an existing database for reading only (the default);
- ``w``: open an existing database for reading and writing;
- ``c``: open for reading and writing, creating the database if needed;
- ``n``: always create a new, empty database (an old one is truncated);

followed by any of these modifiers:

- ``f`` (fast): accepted; kuradb always works this way, writing to the
  operating system when it decides and to the device on ``sync()``;
- ``s`` (synchronized): every change is followed by a hard synchronization,
  so it is on the device (and survives a power cut) when the call returns;
- ``u`` (unlocked): the file is not locked against other processes (and a
  hash database does not grow by itself: a rebuild would replace the file
  under them).

``mode`` is the permission of a newly created file (less the umask). A new
database is of the class its file name's extension names, as everywhere in
kuradb (the table "File extensions" of its README: ``.kh`` ``.hash`` ``.tkh``
hash, ``.kt`` ``.tree`` ``.tkt`` tree, ``.ks`` ``.skip`` ``.tks`` skip, and
the on-memory classes'; ``kuradb.DBM.class_for_path`` tells); without one it
is a hash database. A new hash database starts at a few kilobytes and grows
as records arrive, rebuilding itself to twice its records when they outnumber
its buckets, so a shelf of two entries is a small file and a large one keeps
its speed. Keys and values are bytes or str (encoded as UTF-8) and are
read back as bytes. Any database error is raised as ``kuradb.dbm.error``, a
subclass of OSError as dbm.gnu's is; a missing key raises KeyError.

``shelve.open`` and the standard ``dbm.open`` choose among the standard
library's modules only (``dbm.whichdb`` knows no others), so they never open
a kuradb file: give ``shelve.Shelf`` the object this module's ``open``
returns, as above.
"""

from __future__ import annotations

import functools
import os
import types
from typing import Any, Callable, Iterator, List, Optional, TypeVar, Union

from . import _kuradb

__all__ = ["open", "error", "KuraDbm"]

Data = Union[bytes, str]
_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


# The buckets of a new hash database: a few kilobytes of file.
_SMALL_NUM_BUCKETS = 1021
# How many writes pass between two checks whether a hash database should grow.
_GROWTH_CHECK_EVERY = 256


class error(OSError):
    """An error of a database opened through ``kuradb.dbm``."""


def _translated(method: _F) -> _F:
    """Raises kuradb's errors of `method` as ``error``."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except _kuradb.Error as e:
            raise error(str(e)) from e

    return wrapper  # type: ignore[return-value]


class KuraDbm:
    """A database opened by ``kuradb.dbm.open``: a mapping of bytes to bytes
    with the methods of a ``dbm.gnu`` object."""

    def __init__(self, db: _kuradb.DBM, writable: bool, synchronized: bool, growable: bool = True) -> None:
        self._db: Optional[_kuradb.DBM] = db
        self._writable = writable
        self._synchronized = synchronized
        self._next_keys: Optional[_kuradb.Iterator] = None
        # A hash database starts small (see open) and grows by rebuilds,
        # each to twice its records, so its chains stay short. Not without
        # a lock ('u'): a rebuild replaces the file other processes may
        # have open.
        self._grows = writable and growable and db.dbm_class() == "hash"
        self._buckets = int(db.inspect().get("num_buckets", "0")) if self._grows else 0
        self._writes = 0

    @property
    def _open(self) -> _kuradb.DBM:
        if self._db is None:
            raise error("the database has already been closed")
        return self._db

    def _changed(self) -> None:
        if self._grows:
            self._writes += 1
            if self._writes % _GROWTH_CHECK_EVERY == 0:
                count = len(self._open)
                if count > self._buckets > 0:
                    self._buckets = 2 * count + 1
                    self._open.rebuild(num_buckets=self._buckets)
        if self._synchronized:
            self._open.synchronize(True)

    def _check_writable(self) -> None:
        if not self._writable:
            raise error("the database was opened for reading only")

    @_translated
    def __getitem__(self, key: Data) -> bytes:
        return self._open[key]

    @_translated
    def __setitem__(self, key: Data, value: Data) -> None:
        self._check_writable()
        self._open[key] = value
        self._changed()

    @_translated
    def __delitem__(self, key: Data) -> None:
        self._check_writable()
        del self._open[key]
        self._changed()

    @_translated
    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (bytes, str)):
            raise TypeError(f"keys must be bytes or str, not {type(key).__name__}")
        return key in self._open

    @_translated
    def __len__(self) -> int:
        return len(self._open)

    @_translated
    def __iter__(self) -> Iterator[bytes]:
        return iter(self._open.keys())

    @_translated
    def keys(self) -> List[bytes]:
        """Every key, as a list."""
        return list(self._open.keys())

    @_translated
    def get(self, key: Data, default: Optional[_T] = None) -> Union[bytes, _T, None]:
        return self._open.get(key, default)

    @_translated
    def setdefault(self, key: Data, default: Data = b"") -> bytes:
        self._check_writable()
        value = self._open.setdefault(key, default)
        self._changed()
        return value

    @_translated
    def clear(self) -> None:
        self._check_writable()
        self._open.clear()
        self._changed()

    @_translated
    def firstkey(self) -> Optional[bytes]:
        """The first key (in the database's order), or None if it is empty;
        ``nextkey`` continues from it."""
        self._next_keys = self._open.make_iterator()
        self._next_keys.first()
        return self._next_keys.get_key()

    @_translated
    def nextkey(self, key: Data) -> Optional[bytes]:
        """The key after `key`, or None after the last."""
        wanted = key.encode() if isinstance(key, str) else bytes(key)
        cursor = self._next_keys
        if cursor is None or cursor.get_key() != wanted:
            cursor = self._open.make_iterator()
            try:
                cursor.jump(wanted)
            except _kuradb.NotFoundError:
                return None
            self._next_keys = cursor
        cursor.next()
        return cursor.get_key()

    @_translated
    def reorganize(self) -> None:
        """Rebuilds the database into a compact file."""
        self._check_writable()
        self._open.rebuild()

    @_translated
    def sync(self) -> None:
        """Writes every change to the device."""
        if self._writable:
            self._open.synchronize(True)

    @_translated
    def close(self) -> None:
        """Closes the database; closing it again does nothing."""
        if self._db is not None:
            db, self._db, self._next_keys = self._db, None, None
            db.close()

    def __enter__(self) -> KuraDbm:
        return self

    def __exit__(
        self,
        exc_type: Optional[type],
        exc: Optional[BaseException],
        tb: Optional[types.TracebackType],
    ) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"<kuradb.dbm.KuraDbm {self._db!r}>"


def open(
    file: Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"], flag: str = "r", mode: int = 0o666
) -> KuraDbm:
    """Opens the database at `file` (str, bytes or os.PathLike); see the
    module's documentation for the flags and modifiers."""
    if not flag or flag[0] not in "rwcn":
        raise ValueError(f"flag must start with r, w, c or n, not {flag!r}")
    for modifier in flag[1:]:
        if modifier not in "fsu":
            raise ValueError(f"flag modifiers are f, s and u, not {modifier!r} in {flag!r}")
    path = os.fspath(file)
    exists = os.path.exists(path) and os.path.getsize(path) > 0
    kind = flag[0]
    if kind in "rw" and not exists:
        raise error(f"{os.fsdecode(path)} does not exist: open it with flag 'c' or 'n' to create it")
    writable = kind != "r"
    params: dict[str, Union[str, bool, int]] = {}
    if "u" in flag:
        params["no_lock"] = True
    if kind == "n" and os.path.exists(path):
        os.remove(path)
        exists = False
    if not exists:
        if _kuradb.DBM.class_for_path(path) is None:
            params["dbm"] = "hash"
        if params.get("dbm", _kuradb.DBM.class_for_path(path)) == "hash":
            # A few records make a file of kilobytes, as dbm users expect;
            # the database grows as records arrive (KuraDbm._changed).
            params["num_buckets"] = _SMALL_NUM_BUCKETS
    created = not os.path.exists(path)
    try:
        db = _kuradb.DBM(path, writable, **params)
    except _kuradb.Error as e:
        raise error(str(e)) from e
    if created and os.path.exists(path):
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(path, mode & ~umask)
    return KuraDbm(db, writable, "s" in flag, growable="u" not in flag)
