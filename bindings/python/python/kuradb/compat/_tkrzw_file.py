"""``File`` of the reference's Python module, enough of it to hand a file to
``DBM.ExportToFlatRecords``, ``ImportFromFlatRecords`` and
``ExportKeysAsLines`` and to read and write it as the reference's programs
do: Open, Close, Read, ReadStr, Write, Append, Truncate, Synchronize,
GetSize, GetPath, and Search over its lines. It works through Python's own
file objects, not kuradb's file layer (kuradb.compat.tkrzw re-exports it).
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO, List, Optional, Union

from .. import _kuradb
from .tkrzw import Data, Status, StatusException, _bytes, _report, _status_of

__all__ = ["File"]

# The reference's file classes under each name its "file" parameter takes.
_FILE_CLASSES = {
    "std": "StdFile", "stdfile": "StdFile",
    "mmap-para": "MemoryMapParallelFile", "memorymapparallelfile": "MemoryMapParallelFile",
    "mmap-atom": "MemoryMapAtomicFile", "memorymapatomicfile": "MemoryMapAtomicFile",
    "pos-para": "PositionalParallelFile", "positionalparallelfile": "PositionalParallelFile",
    "pos-atom": "PositionalAtomicFile", "positionalatomicfile": "PositionalAtomicFile",
}


class File:
    """A file read and written at offsets, as the reference's ``tkrzw.File``."""

    def __init__(self) -> None:
        self._file: Optional[BinaryIO] = None
        self._path = ""
        self._class = "MemoryMapParallelFile"
        self._padding = 0

    def Open(self, path: Union[str, bytes, "os.PathLike[str]"], writable: bool, **params: Any) -> Status:
        """Opens ``path``; ``truncate`` empties it and ``no_create`` refuses a
        missing one (writable only). ``file`` names the class repr shows;
        ``access_options`` with "padding" (options separated by colons) and
        a ``block_size`` pad the file to a multiple of the block size when it
        is closed, as the reference's positional files leave it. The other
        tuning parameters are accepted and have no effect here."""
        if self._file is not None:
            return Status(Status.PRECONDITION_ERROR, "opened file")
        # The reference's File is memory-mapped unless told otherwise.
        class_name = _FILE_CLASSES.get(str(params.get("file", "mmap-para")).lower())
        if class_name is None:
            return Status(Status.INVALID_ARGUMENT_ERROR, f"unsupported file class: {params['file']}")
        try:
            block_size = int(params.get("block_size", 0))
        except (TypeError, ValueError):
            return Status(Status.INVALID_ARGUMENT_ERROR, f"invalid block_size: {params['block_size']!r}")
        options = str(params.get("access_options", "")).replace("+", ":").replace(",", ":").split(":")
        exists = os.path.exists(path)
        if writable and not exists and params.get("no_create"):
            return Status(Status.NOT_FOUND_ERROR, f"no such file: {os.fsdecode(path)}")
        try:
            if not writable:
                self._file = open(path, "rb", buffering=0)
            elif params.get("truncate") or not exists:
                self._file = open(path, "w+b", buffering=0)
            else:
                self._file = open(path, "r+b", buffering=0)
        except FileNotFoundError as e:
            return Status(Status.NOT_FOUND_ERROR, str(e))
        except OSError as e:
            return Status(Status.SYSTEM_ERROR, str(e))
        self._path = os.fsdecode(path)
        self._class = class_name
        self._padding = block_size if writable and block_size > 1 and "padding" in options else 0
        return Status()

    def Close(self) -> Status:
        if self._file is None:
            return Status(Status.PRECONDITION_ERROR, "not opened file")
        outcome = Status()
        try:
            if self._padding:
                size = self._size()
                padded = -(-size // self._padding) * self._padding
                if padded != size:
                    self._file.truncate(padded)
        except OSError as e:
            outcome = Status(Status.SYSTEM_ERROR, str(e))
        self._file.close()
        self._file = None
        return outcome

    def Read(self, off: int, size: int, status: Optional[Status] = None) -> Optional[bytes]:
        """The ``size`` bytes at ``off``, or None (INFEASIBLE_ERROR) if they
        go past the end."""
        if self._file is None:
            _report(status, Status(Status.PRECONDITION_ERROR, "not opened file"))
            return None
        if off < 0 or size < 0 or off + size > self._size():
            _report(status, Status(Status.INFEASIBLE_ERROR, "excessive size"))
            return None
        self._file.seek(off)
        data = self._file.read(size)
        _report(status, Status())
        return data

    def ReadStr(self, off: int, size: int, status: Optional[Status] = None) -> Optional[str]:
        data = self.Read(off, size, status)
        return None if data is None else data.decode("utf-8", "replace")

    def Write(self, off: int, data: Data) -> Status:
        """Writes ``data`` at ``off``, extending the file if needed."""
        if self._file is None:
            return Status(Status.PRECONDITION_ERROR, "not opened file")
        try:
            self._file.seek(off)
            self._file.write(_bytes(data))
        except OSError as e:
            return Status(Status.SYSTEM_ERROR, str(e))
        return Status()

    def Append(self, data: Data, status: Optional[Status] = None) -> Optional[int]:
        """Writes ``data`` at the end; returns the offset it was written at."""
        if self._file is None:
            _report(status, Status(Status.PRECONDITION_ERROR, "not opened file"))
            return None
        off = self._size()
        outcome = self.Write(off, data)
        _report(status, outcome)
        return off if outcome.IsOK() else None

    def Truncate(self, size: int) -> Status:
        if self._file is None:
            return Status(Status.PRECONDITION_ERROR, "not opened file")
        try:
            self._file.truncate(size)
        except OSError as e:
            return Status(Status.SYSTEM_ERROR, str(e))
        return Status()

    def Synchronize(self, hard: bool, off: int = 0, size: int = 0) -> Status:
        """Flushes to the OS, and to the device if ``hard`` (the whole file,
        whatever the range)."""
        if self._file is None:
            return Status(Status.PRECONDITION_ERROR, "not opened file")
        try:
            self._file.flush()
            if hard:
                os.fsync(self._file.fileno())
        except OSError as e:
            return Status(Status.SYSTEM_ERROR, str(e))
        return Status()

    def GetSize(self) -> Optional[int]:
        return None if self._file is None else self._size()

    def GetPath(self) -> Optional[str]:
        return None if self._file is None else self._path

    def Search(self, mode: str, pattern: Data, capacity: int = 0) -> List[str]:
        """The lines (without their line feeds) matching ``pattern`` in
        ``mode``, as DBM.Search takes it ("contain", "begin", "end", "regex",
        "edit", "editbin", …), at most ``capacity`` (0: all), as str.
        Raises StatusException for an unopened file, an unknown mode or a
        bad pattern."""
        if self._file is None:
            raise StatusException(Status(Status.PRECONDITION_ERROR, "not opened file"))
        self._file.seek(0)
        text = self._file.read()
        try:
            lines = _kuradb.search_lines(text, mode, _bytes(pattern), capacity)
        except _kuradb.Error as e:
            raise StatusException(_status_of(e)) from None
        return [line.decode("utf-8", "replace") for line in lines]

    def _size(self) -> int:
        assert self._file is not None
        self._file.flush()
        return os.fstat(self._file.fileno()).st_size

    def __repr__(self) -> str:
        if self._file is None:
            return "<tkrzw.File: class=unknown path= size=-1>"
        return f"<tkrzw.File: class={self._class} path={self._path} size={self._size()}>"

    def __str__(self) -> str:
        return repr(self)[len("<tkrzw.File: "):-1]
