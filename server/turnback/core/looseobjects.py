"""Writes a capture's few new objects loose, as git does, flushed together.

libgit2 writes each loose object with an fsync of the file and one of its folder, one
after the other (`ENABLE_FSYNC_GITDIR`): a turn on linux's tree writes ~45 objects (the
changed files' blobs, the trees above them, the anchor, the timeline's), and creating and
flushing them one by one cost 25.7 ms (45 objects into linux's object folders, 15 runs).
Here each object is compressed, created, written and flushed on one of the flushing
threads (`durability.side_by_side`: a journaling file system serves waits that arrive
together at once), then all are renamed into place and their folders flushed side by
side: 13.4 ms. Each object is on stable storage, under its name, before this returns, as
with libgit2's own writes; only the order of the waits changes.

The files are what libgit2 and git write: zlib-compressed `<type> <size>\\0<content>`,
read-only, in `objects/xx/`, staged as `tmp_obj_*` there (a crash leaves those, which
git's gc deletes after two weeks).
"""

from __future__ import annotations

import os
import secrets
import zlib
from collections.abc import Iterable
from pathlib import Path

from ..errors import StorageFailed
from .durability import Touched, flush_fd, make_durable, side_by_side

#: git's type names by libgit2's type numbers (commit, tree, blob, tag).
_TYPE_NAMES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
#: libgit2's zlib level for loose objects.
COMPRESSION = 1
#: git's mode for an object file (the umask applies, as it does to libgit2's).
_FILE_MODE = 0o444
_BINARY = getattr(os, "O_BINARY", 0)
#: How often a folder that git's prune removed is made again before giving up.
_PRUNE_ATTEMPTS = 5


def write_loose(objects_dir: Path, objects: Iterable[tuple[bytes, int, bytes]]) -> None:
    """Writes (raw 20-byte id, git type number, content) objects as loose files in
    `objects_dir`, all on stable storage once this returns; an object already there is
    left alone (a shared repository's read bits are added after the operation, as to
    libgit2's writes: `WorkspaceRepo.settle_permissions`). A file system error (a full
    disk) is `StorageFailed`, and what was staged is removed."""
    wanted: list[tuple[Path, int, bytes]] = []  # (where the object goes, type, content)
    staged: list[Path] = []  # appended to by the staging threads as files appear
    made: list[Path] = []  # the folders they made (a fresh clone has none)
    try:
        try:
            for raw_id, kind, data in objects:
                hexid = raw_id.hex()
                target = objects_dir / hexid[:2] / hexid[2:]
                if not target.exists():
                    wanted.append((target, kind, data))
            # Compressed on the threads too: zlib lets go of the interpreter meanwhile.
            temporaries = side_by_side(
                lambda o: _stage(o[0].parent, _compressed(*o[1:]), staged, made), wanted
            )
            for temporary, (target, _kind, _data) in zip(temporaries, wanted, strict=True):
                os.replace(temporary, target)
            staged.clear()
            touched = Touched(dirs={target.parent for target, _kind, _data in wanted})
            if made:
                touched.changed_entries_of(objects_dir)
            make_durable(touched)
        except OSError as error:
            raise StorageFailed.from_os_error(error) from error
    except BaseException:
        for temporary in staged:
            temporary.unlink(missing_ok=True)
        raise


def _compressed(kind: int, data: bytes) -> bytes:
    """The loose object file's bytes: `<type> <size>\\0<content>`, zlib-compressed."""
    compressor = zlib.compressobj(COMPRESSION)
    header = _TYPE_NAMES[kind] + b" %d\x00" % len(data)
    return compressor.compress(header) + compressor.compress(data) + compressor.flush()


def _stage(folder: Path, compressed: bytes, staged: list[Path], made: list[Path]) -> Path:
    """A temporary file in `folder` holding `compressed`, on stable storage (listed in
    `staged` as soon as it exists, for the caller to remove on a failure); `folder` is
    made if it is missing, and listed in `made`."""
    attempts = 0
    while True:
        path = folder / f"tmp_obj_{secrets.token_hex(6)}"
        try:
            # Read-only from the start, as git's objects are; the umask applies.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _BINARY, _FILE_MODE)
            break
        except FileExistsError:
            continue
        except FileNotFoundError:
            attempts += 1
            if attempts > _PRUNE_ATTEMPTS:
                raise
            if attempts > 1:
                made_again(folder)  # git's prune removed it, empty, since it was made
            else:
                folder.mkdir(exist_ok=True)
            made.append(folder)
    staged.append(path)
    try:
        view = memoryview(compressed)
        while view:
            view = view[os.write(fd, view) :]
        flush_fd(fd)
    finally:
        os.close(fd)
    return path


def made_again(folder: Path) -> None:
    """Makes an object folder again: git's `prune-packed` removed it, empty, since it was
    made (the race objectwrites.py describes for libgit2's writes)."""
    folder.mkdir(exist_ok=True)
