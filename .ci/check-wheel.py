"""Checks that a built kuradb wheel is publishable: a manylinux platform tag
(never the bare linux one, which PyPI refuses), the stable ABI tag, the
package README as its description, and a stripped extension (no symbol
table, no debug sections) of a sane size. Usage: check-wheel.py WHEEL."""

from __future__ import annotations

import re
import struct
import sys
import zipfile

MAX_EXTENSION_BYTES = 8 * 1024 * 1024  # stripped 5.6 MB (November 2026); unstripped some 12 MB and more


def section_names(elf: bytes) -> list[str]:
    """The names of an ELF64 little-endian file's sections."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise SystemExit("the extension is not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]
    names = []
    for name_off, *_ in headers:
        start = names_at + name_off
        names.append(elf[start:elf.index(b"\0", start)].decode())
    return names


def main(wheel: str) -> None:
    name = wheel.rsplit("/", 1)[-1]
    tags = re.fullmatch(r"kuradb-[^-]+-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl", name)
    if not tags:
        raise SystemExit(f"{name}: not a kuradb wheel's name")
    if not re.fullmatch(r"manylinux_\d+_\d+_\w+(\.manylinux\w+)*|manylinux\d+_\w+(\.manylinux_\w+)*", tags["plat"]):
        raise SystemExit(f"{name}: platform tag {tags['plat']} is not manylinux (PyPI refuses linux_*)")
    if tags["abi"] != "abi3":
        raise SystemExit(f"{name}: ABI tag {tags['abi']} is not abi3 (one wheel for every CPython >= 3.9)")
    with zipfile.ZipFile(wheel) as zf:
        extensions = [n for n in zf.namelist() if re.fullmatch(r"kuradb/_kuradb\..*so", n)]
        if len(extensions) != 1:
            raise SystemExit(f"{name}: expected one kuradb/_kuradb*.so, found {extensions}")
        elf = zf.read(extensions[0])
        metadata = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    debug = [s for s in section_names(elf) if s == ".symtab" or s.startswith(".debug")]
    if debug:
        raise SystemExit(f"{name}: the extension is not stripped: it has {debug}")
    if len(elf) > MAX_EXTENSION_BYTES:
        raise SystemExit(f"{name}: the extension is {len(elf)} bytes, over {MAX_EXTENSION_BYTES}")
    for needed in ("Summary: ", "License", "Description-Content-Type: text/markdown", "# kuradb for Python"):
        if needed not in metadata:
            raise SystemExit(f"{name}: METADATA lacks {needed!r}")
    if "../../README.md" in metadata:
        raise SystemExit(f"{name}: the description links into the repository, which a wheel's reader lacks")
    print(f"{name}: publishable ({tags['plat']}, abi3, stripped extension of {len(elf) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main(sys.argv[1])
