"""Object writes that survive git's `prune-packed` removing a fan-out folder under them.

`git gc` and `git repack -d` end with `prune-packed`: it deletes the loose objects a pack
now holds and removes every `objects/xx` folder it leaves empty. libgit2 writes a loose
object to a temporary file, creates `objects/xx`, flushes the file, then links it in, so
a prune during that flush leaves it no folder ("failed to rename lockfile to
'.../objects/xx/...': No such file or directory"). libgit2 tries a tree or a commit
twice (`git_odb_write` falls back to a streamed write) but a blob, or `Odb.write`, once.
And `git_commit_create` drops the error when both tries fail (libgit2 1.9,
`git_commit__create_internal`: `if (git_odb_write(...) < 0) goto cleanup;` returns the
0 of the step before): it answers with the id of a commit that is not on disk. So every
write that lost the race is written again (same name, same bytes: harmless, as git's
own callers retry), and every commit is looked for once written. Any other refusal of
the file system (a full disk) is `StorageFailed`.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Callable
from typing import BinaryIO, TypeVar

import pygit2

from ..errors import StorageFailed

#: Attempts at one object write while git prunes: each loses only if a prune removes
#: the new folder during the ~0.5 ms flush, and a `prune-packed` passes each folder once.
#: Prunes run back to back (the test's, or a loop of gc runs) beat 6 attempts on a loaded
#: machine (CI, once), and 12 in a fresh clone's `make test` (once); 30 wait at most
#: ~0.3 s in all.
PRUNE_ATTEMPTS = 30
#: The pause before the second attempt, then growing up to `PRUNE_PAUSE_MAX`: a prune
#: under way moves on.
PRUNE_PAUSE = 0.002
PRUNE_PAUSE_MAX = 0.01

#: Where libgit2 links a loose object in, as its error names it.
_LOOSE_OBJECT = re.compile(r"/objects/[0-9a-f]{2}/[0-9a-f]{38}\b")

T = TypeVar("T")


class CommitNotWritten(OSError):
    """libgit2 answered with a commit id, but no such commit is in the repository."""


def pruned_under(error: BaseException) -> bool:
    """libgit2's error for an object whose fan-out folder vanished before it was linked."""
    if isinstance(error, CommitNotWritten):
        return True
    text = str(error).replace("\\", "/")
    return "No such file or directory" in text and _LOOSE_OBJECT.search(text) is not None


def written(write: Callable[[], T], where: str | None = None, size: int = 0) -> T:
    """`write()`, again while it loses the race with git's prune; any other refusal of the
    file system (libgit2 raises OSError: a full disk, say) is `StorageFailed`. libgit2 may
    also report a full disk as a GitError carrying an earlier call's message ("index does
    not contain ..."): with `where` (the repository), a GitError there on a file system
    without room for `size` bytes and a margin is `StorageFailed` too, never taken for a
    file changing (a disk is full long before its last byte is taken)."""
    for attempt in range(1, PRUNE_ATTEMPTS + 1):
        try:
            return write()
        except OSError as error:
            if where is not None and _no_space(where, size):
                raise _disk_full(where) from error  # libgit2's own words may be stale
            if attempt == PRUNE_ATTEMPTS or not pruned_under(error):
                raise StorageFailed.from_os_error(error) from error
            time.sleep(min(PRUNE_PAUSE * attempt, PRUNE_PAUSE_MAX))
        except pygit2.GitError as error:
            if where is not None and _no_space(where, size):
                raise _disk_full(where) from error
            raise
    raise AssertionError("unreachable")


def _disk_full(where: str) -> StorageFailed:
    return StorageFailed.from_os_error(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), where))


#: Free space under which a write's GitError is taken for a full disk: libgit2 writes an
#: object whole to a temporary file, and a file system keeps blocks for itself.
NO_SPACE_MARGIN = 1 << 20


def _no_space(path: str, size: int = 0) -> bool:
    try:
        found = os.statvfs(path)
    except (OSError, AttributeError):  # no statvfs on Windows
        return False
    return found.f_bavail * found.f_frsize < size + NO_SPACE_MARGIN or found.f_favail == 0


def write_blob(repo: pygit2.Repository, data: bytes) -> pygit2.Oid:
    return written(lambda: repo.create_blob(data), repo.path, len(data))


def write_blob_from(repo: pygit2.Repository, stream: BinaryIO) -> pygit2.Oid:
    """A blob of everything `stream` holds from its start (read again on a retry)."""

    def write() -> pygit2.Oid:
        stream.seek(0)
        return repo.create_blob_fromiobase(stream)

    return written(write, repo.path)


def write_commit(
    repo: pygit2.Repository,
    author: pygit2.Signature,
    committer: pygit2.Signature,
    message: str,
    tree: pygit2.Oid,
    parents: list[pygit2.Oid],
) -> pygit2.Oid:
    """A commit no ref names yet, on disk (or in the handle's memory) once this returns."""

    def write() -> pygit2.Oid:
        oid = repo.create_commit(None, author, committer, message, tree, parents)
        if not repo.odb.exists(oid):
            raise CommitNotWritten(f"libgit2 reported commit {oid} written, but it is not")
        return oid

    return written(write, repo.path)
