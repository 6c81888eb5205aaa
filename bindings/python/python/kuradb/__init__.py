"""kuradb: an embedded key-value database of the DBM family, written in Rust.

``kuradb.DBM`` opens a database of any class (hash, tree, skip, …) from a path
(str, bytes or os.PathLike) and keyword parameters; it is a
``collections.abc.MutableMapping`` of bytes to bytes and releases the GIL while
it works. Every error is a ``kuradb.Error``, an ``OSError``. ``kuradb.AsyncDBM(db, num_workers)`` puts one behind worker threads:
its methods return ``kuradb.Future``s to await under asyncio. ``kuradb.Index``
is a secondary index: (key, value) pairs in a file or in memory. ``kuradb.UpdateLogReader``
reads the update logs that ``ulog_prefix=`` writes. ``db.transaction()``, ``db.batch()`` and ``db.snapshot()`` give serializable
transactions (a conflict raises ``kuradb.ConflictError``), atomic batches and
read views; ``db.run(func)`` and ``@kuradb.transactional(db)`` retry a
transaction on conflict. ``kuradb.DBM(dir)`` opens a published directory (versions of a shard set)
read-only, ``kuradb.PublishJob`` stages and commits a new version of one,
and ``kuradb.shard_of(key, num_shards)`` names the shard a key belongs in. ``kuradb.dbm`` is the standard library's dbm interface and
``kuradb.compat.tkrzw`` the shape of the reference's (Tkrzw's) Python module.

    >>> import kuradb
    >>> with kuradb.DBM("/tmp/casket.kh", True, truncate=True) as db:
    ...     db["japan"] = "tokyo"
    ...     db["japan"]
    b'tokyo'
"""

from ._kuradb import (
    ANY_DATA,
    AsyncBatch,
    AsyncDBM,
    AsyncSnapshot,
    AsyncTransaction,
    Batch,
    ConflictError,
    Future,
    Savepoint,
    Snapshot,
    Transaction,
    BrokenDataError,
    CanceledError,
    DuplicationError,
    Error,
    InfeasibleError,
    ReadOnlyError,
    Index,
    IndexIterator,
    InvalidArgumentError,
    Iterator,
    NoSuchFileError,
    NotFoundError,
    OperatingSystemError,
    RecordIterator,
    UnsupportedError,
    UpdateLogEntry,
    UpdateLogReader,
    WouldBlockError,
    PublishJob,
    __version__,
    shard_of,
    shard_of_arrow,
    verify_published,
)
from ._mapping import DBM, transactional

__all__ = [
    "ANY_DATA",
    "DBM",
    "AsyncDBM",
    "Future",
    "Iterator",
    "RecordIterator",
    "Index",
    "IndexIterator",
    "UpdateLogReader",
    "UpdateLogEntry",
    "Error",
    "NotFoundError",
    "NoSuchFileError",
    "DuplicationError",
    "InvalidArgumentError",
    "InfeasibleError",
    "ReadOnlyError",
    "BrokenDataError",
    "WouldBlockError",
    "OperatingSystemError",
    "UnsupportedError",
    "CanceledError",
    "ConflictError",
    "Transaction",
    "Batch",
    "Snapshot",
    "Savepoint",
    "AsyncTransaction",
    "AsyncBatch",
    "AsyncSnapshot",
    "transactional",
    "shard_of",
    "shard_of_arrow",
    "PublishJob",
    "verify_published",
    "__version__",
]
