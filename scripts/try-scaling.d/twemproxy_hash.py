"""Which server nutcracker (twemproxy) sends a key to, for a pool with
`hash: fnv1a_64` and `distribution: modula` whose servers all have weight
1 and are never ejected (`auto_eject_hosts: false`).

twemproxy's fnv1a_64 is FNV-1a with the 64-bit offset basis and prime but a
32-bit state: both constants are cut to their low 32 bits, and each key byte
is read as a C `char`, which is signed on x86 and ARM64 Linux builds, so a
byte of 0x80 or more is sign-extended to 32 bits before the XOR. Modula
then picks server `hash % number_of_servers`, in the order the servers are
listed; the empty key, which it does not hash, goes to the first server. A
pool without `hash_tag` hashes the whole key.

`server_of` does it for one key; `server_of_arrow` for an Arrow array of
keys at once (numpy, one pass per byte position), which is what the Spark
job uses. The test bindings/python/tests/test_twemproxy_routing.py checks
both against nutcracker itself."""

from typing import Union

import numpy as np

_BASIS = 0xCBF29CE484222325 & 0xFFFFFFFF
_PRIME = 0x100000001B3 & 0xFFFFFFFF
_MASK = 0xFFFFFFFF


def fnv1a_64(key: Union[bytes, str]) -> int:
    """twemproxy's fnv1a_64 of ``key`` (a str is hashed as UTF-8): a 32-bit
    number."""
    if isinstance(key, str):
        key = key.encode("utf-8")
    h = _BASIS
    for byte in key:
        if byte >= 0x80:
            byte |= 0xFFFFFF00  # a signed char, widened
        h = ((h ^ byte) * _PRIME) & _MASK
    return h


def server_of(key: Union[bytes, str], num_servers: int) -> int:
    """The index, in the pool's server list, of the server nutcracker sends
    ``key`` to (fnv1a_64, modula)."""
    if num_servers < 1:
        raise ValueError(f"a pool has at least one server, not {num_servers}")
    if len(key) == 0:
        return 0
    return fnv1a_64(key) % num_servers


def server_of_arrow(keys, num_servers: int):
    """``server_of`` of every key of the Arrow array ``keys`` (string or
    binary, no nulls), as an Arrow int32 array."""
    import pyarrow as pa

    if num_servers < 1:
        raise ValueError(f"a pool has at least one server, not {num_servers}")
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if keys.null_count:
        raise ValueError("a key is null: nutcracker routes only keys")
    if pa.types.is_large_string(keys.type) or pa.types.is_large_binary(keys.type):
        keys = keys.cast(pa.large_binary())
        offset_type = np.int64
    else:
        keys = keys.cast(pa.binary())
        offset_type = np.int32
    n = len(keys)
    _, offsets_buf, data_buf = keys.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=offset_type)[keys.offset : keys.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    h = np.full(n, _BASIS, dtype=np.uint32)
    prime = np.uint32(_PRIME)
    longest = int(lengths.max()) if n else 0
    for at in range(longest):
        live = np.nonzero(lengths > at)[0]
        byte = data[starts[live] + at].astype(np.uint32)
        byte = np.where(byte >= 0x80, byte | np.uint32(0xFFFFFF00), byte)
        h[live] = (h[live] ^ byte) * prime  # uint32 arithmetic wraps, as C's does
    servers = (h % np.uint32(num_servers)).astype(np.int32)
    servers[lengths == 0] = 0
    return pa.array(servers, type=pa.int32())
