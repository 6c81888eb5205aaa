"""``Utility`` of the reference's Python module; ``kuradb.compat.tkrzw``
re-exports it.

The hash functions give the reference's numbers bit for bit (checked
against python3-tkrzw), so keys a program placed with them land in the same
buckets or shards. ``VERSION`` is kuradb's version, not the reference's.
The memory figures are true bytes (the reference multiplies kilobytes by
1,000).
"""

from __future__ import annotations

import os
import platform
from typing import Union

from .. import _kuradb

__all__ = ["Utility"]


def _data(data: Union[str, bytes, bytearray, memoryview]) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    return str(data).encode("utf-8")


def _range(count: int | None) -> int:
    # The reference's bindings take "0 or less" (or nothing) as the whole
    # 64-bit range; the native functions take 0 for it.
    if count is None or count <= 0:
        return 0
    return count


class Utility:
    """Library utilities, as the reference's ``tkrzw.Utility``."""

    VERSION: str = _kuradb.__version__
    OS_NAME: str = platform.system()
    PAGE_SIZE: int = os.sysconf("SC_PAGESIZE") if hasattr(os, "sysconf") else 4096
    INT32MIN: int = -(1 << 31)
    INT32MAX: int = (1 << 31) - 1
    UINT32MAX: int = (1 << 32) - 1
    INT64MIN: int = -(1 << 63)
    INT64MAX: int = (1 << 63) - 1
    UINT64MAX: int = (1 << 64) - 1

    @classmethod
    def GetMemoryCapacity(cls) -> int:
        """The machine's total memory in bytes."""
        return _kuradb.memory_capacity()

    @classmethod
    def GetMemoryUsage(cls) -> int:
        """The process's resident memory in bytes."""
        return _kuradb.memory_usage()

    @classmethod
    def PrimaryHash(cls, data: Union[str, bytes], num_buckets: int | None = None) -> int:
        """The primary hash of the reference's hash database, in
        ``0..num_buckets`` (the whole 64-bit range without it)."""
        return _kuradb.primary_hash(_data(data), _range(num_buckets))

    @classmethod
    def SecondaryHash(cls, data: Union[str, bytes], num_shards: int | None = None) -> int:
        """The reference's hash for sharding, in ``0..num_shards`` (the
        whole 64-bit range without it)."""
        return _kuradb.secondary_hash(_data(data), _range(num_shards))

    @classmethod
    def SerializeInt(cls, num: int) -> bytes:
        """``num`` as 8 big-endian bytes."""
        return _kuradb.serialize_int(int(num))

    @classmethod
    def DeserializeInt(cls, data: Union[str, bytes]) -> int:
        """The integer of a big-endian sequence (its first 8 bytes at most)."""
        return _kuradb.deserialize_int(_data(data))

    @classmethod
    def SerializeFloat(cls, num: float) -> bytes:
        """``num`` as 8 big-endian bytes (an IEEE double)."""
        return _kuradb.serialize_float(float(num))

    @classmethod
    def DeserializeFloat(cls, data: Union[str, bytes]) -> float:
        """The number of a big-endian IEEE single or double; NaN for any other length."""
        return _kuradb.deserialize_float(_data(data))

    @classmethod
    def EditDistanceLev(cls, a: str, b: str) -> int:
        """The Levenshtein distance of two strings, in characters."""
        return _kuradb.edit_distance_lev(str(a), str(b))
