"""Reading a work tree that may change while it is read.

A file an agent is still writing can change between the scan that stats it and the
read that hashes it: the snapshot would then name bytes the file never held at one
moment. `hash_or_gone` notices (the stat before and after differ) and reads the file
again at once, a few times: a log a server appends to a few times a second is read
between two writes (it used to fail every capture until the server stopped). Only a file
that changes under every read raises `Churn`; `retrying` then runs the whole capture
again a few times, and refuses with a clear error rather than record something
inconsistent.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from typing import TypeVar

import pygit2

from ..core.objectwrites import write_blob
from ..core.rawhash import read_raw, stream_path
from ..errors import StorageFailed, WorkTreeChanging

T = TypeVar("T")


#: A capture whose files keep changing under it is retried this often, then refused.
CHURN_ATTEMPTS = 3
#: A file that changed while it was read is read again at once this often (each read
#: between the same two stats), before the whole capture is retried.
READ_ATTEMPTS = 4


class Churn(Exception):
    """A file changed while it was read: the snapshot would not be consistent."""


def retrying(work: Callable[[], T], reset: Callable[[], None], outcome: str) -> T:
    """Runs `work` again while files change under it, then refuses with WorkTreeChanging."""
    for attempt in range(CHURN_ATTEMPTS):
        try:
            return work()
        except Churn as churn:
            reset()
            if attempt == CHURN_ATTEMPTS - 1:
                raise WorkTreeChanging(
                    f"Files kept changing while turnback read them ({churn}); {outcome}. "
                    "Try again when the writes have finished."
                ) from None
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def hash_or_gone(
    repo: pygit2.Repository, full: str, st: os.stat_result
) -> tuple[pygit2.Oid, os.stat_result] | None:
    """The file's blob and the stat it was read under (the index records that stat); None
    when the file vanished; Churn when it changed under every read. A file the user may not
    read is StorageFailed naming it, and the repository refusing the blob's write (a full
    disk) is StorageFailed too: neither is a file changing."""
    for _attempt in range(READ_ATTEMPTS):
        try:
            # Read whole, then written once the stat says the read is whole: the window in
            # which a write spoils the read is the read alone, not its compression and flush.
            data = read_raw(full, st)
            streamed = stream_path(repo, full) if data is None else None
        except PermissionError as error:
            raise StorageFailed.from_os_error(error) from error
        except (OSError, pygit2.GitError, KeyError) as error:
            if not os.path.lexists(full):
                return None
            raise Churn(f"{full}: {error}") from error
        try:
            after = os.lstat(full)
        except OSError:
            return None
        if (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns):
            if streamed is not None:
                return streamed, st
            assert data is not None
            return write_blob(repo, data), st
        if stat.S_IFMT(after.st_mode) != stat.S_IFMT(st.st_mode):
            break  # a file became a link or a directory: the whole capture looks again
        st = after
    raise Churn(f"{full} changed while it was read")
