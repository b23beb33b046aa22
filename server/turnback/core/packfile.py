"""Writes objects as one git pack and its index (version 2), durably, with no deltas.

Used for a batch of new objects too large to write one loose file each (see
`objectbatch`): one file to compress into and two fsyncs instead of one file
created and fsynced, with its directory, per object. The format is git's
(Documentation/gitformat-pack.txt); `git verify-pack` and libgit2 read it.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import StorageFailed
from . import faults
from .durability import Touched, make_durable

#: zlib level of the packed objects: libgit2 writes loose objects at level 1 too.
COMPRESSION = 1
_IDX_MAGIC = b"\xfftOc"
_LARGE_OFFSET = 0x80000000


def _entry_header(kind: int, size: int) -> bytes:
    """The type and inflated size, 4 bits then 7 bits per byte, low bits first."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _write_pack(
    stream: BinaryIO, count: int, objects: Iterable[tuple[bytes, int, bytes]]
) -> tuple[bytes, list[tuple[bytes, int, int]]]:
    """Streams the pack (one object in memory at a time); returns its checksum and (object
    id, crc32 of its entry, offset) per object."""
    digest = hashlib.sha1()
    offset = 0
    entries = []

    def put(data: bytes) -> None:
        nonlocal offset
        stream.write(data)
        digest.update(data)
        offset += len(data)

    put(b"PACK" + struct.pack(">II", 2, count))
    for raw_id, kind, data in objects:
        entry = _entry_header(kind, len(data)) + zlib.compress(data, COMPRESSION)
        entries.append((raw_id, zlib.crc32(entry), offset))
        put(entry)
    if len(entries) != count:
        raise ValueError(f"a pack of {count} objects was given {len(entries)}")
    checksum = digest.digest()
    stream.write(checksum)
    return checksum, entries


def _index(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    entries = sorted(entries)
    fanout = [0] * 256
    for raw_id, _crc, _offset in entries:
        fanout[raw_id[0]] += 1
    total = 0
    for i, n in enumerate(fanout):
        total += n
        fanout[i] = total
    small, large = [], []
    for _raw_id, _crc, offset in entries:
        if offset < _LARGE_OFFSET:
            small.append(offset)
        else:
            small.append(_LARGE_OFFSET | len(large))
            large.append(offset)
    out = bytearray(_IDX_MAGIC + struct.pack(">I", 2))
    out += struct.pack(">256I", *fanout)
    out += b"".join(raw_id for raw_id, _crc, _offset in entries)
    out += struct.pack(f">{len(entries)}I", *(crc for _id, crc, _off in entries))
    out += struct.pack(f">{len(small)}I", *small)
    out += struct.pack(f">{len(large)}Q", *large)
    out += pack_checksum
    out += hashlib.sha1(out).digest()
    return bytes(out)


def write_pack(pack_dir: Path, count: int, objects: Iterable[tuple[bytes, int, bytes]]) -> Path:
    """Writes `count` (raw 20-byte id, git type number, content) objects as
    `pack-<sum>.pack` and `.idx` in `pack_dir`; both files are on stable storage before
    either name appears, and the directory's entries after. Returns the pack's path; a
    file system error (a full disk) is `StorageFailed`."""
    try:
        return _publish_pack(pack_dir, count, objects)
    except OSError as error:
        raise StorageFailed.from_os_error(error) from error


def _publish_pack(pack_dir: Path, count: int, objects: Iterable[tuple[bytes, int, bytes]]) -> Path:
    pack = _staged(pack_dir, lambda stream: _write_pack(stream, count, objects))
    checksum, entries = pack.result
    index = _staged(pack_dir, lambda stream: stream.write(_index(entries, checksum)))
    name = f"pack-{checksum.hex()}"
    final = [pack_dir / f"{name}.pack", pack_dir / f"{name}.idx"]
    for source, target in zip((pack.path, index.path), final, strict=True):
        os.replace(source, target)  # the index last: it is what publishes the pack
    make_durable(Touched(dirs={pack_dir}))
    faults.step("pack written")
    return final[0]


@dataclass
class _Staged:
    path: Path
    result: Any


def _staged(pack_dir: Path, fill: Callable[[BinaryIO], Any]) -> _Staged:
    """A temporary file in `pack_dir` that `fill` writes, then flushed to stable storage."""
    fd, name = tempfile.mkstemp(prefix="tmp_turnback_", dir=pack_dir)
    try:
        with os.fdopen(fd, "wb") as stream:
            result = fill(stream)
        make_durable(Touched(files={Path(name)}))
        os.chmod(name, 0o444)  # as git leaves its packs
    except BaseException:
        os.unlink(name)
        raise
    return _Staged(Path(name), result)
