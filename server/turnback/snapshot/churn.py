"""Reading a work tree that may change while it is read.

A file an agent is still writing can change between the scan that stats it and the
read that hashes it: the snapshot would then name bytes the file never held at one
moment. `hash_or_gone` notices (the stat before and after differ) and raises `Churn`;
`retrying` runs the whole capture again a few times, then refuses with a clear error
rather than record something inconsistent.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

import pygit2

from ..core.rawhash import hash_path
from ..errors import WorkTreeChanging

T = TypeVar("T")


#: A capture whose files keep changing under it is retried this often, then refused.
CHURN_ATTEMPTS = 3


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


def hash_or_gone(repo: pygit2.Repository, full: str, st: os.stat_result) -> pygit2.Oid | None:
    """The file's blob; None when the file vanished; Churn when it changed mid-read.
    The repository refusing the blob's write (a full disk) is StorageFailed, not Churn."""
    try:
        oid = hash_path(repo, full, st)
    except (OSError, pygit2.GitError, KeyError) as error:
        if not os.path.lexists(full):
            return None
        raise Churn(f"{full}: {error}") from error
    try:
        after = os.lstat(full)
    except OSError:
        return None
    if (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
        raise Churn(f"{full} changed while it was read")
    return oid
