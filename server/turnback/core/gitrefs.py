"""Ref updates that wait out git's own short-lived ref locks and directory pruning.

`git gc --auto`, `pack-refs` and `update-ref` hold `<ref>.lock` (or packed-refs.lock)
for a moment, and git itself waits `core.filesRefLockTimeout` for such locks;
libgit2 fails at once. `pack-refs --prune` also removes the directories its loose refs
leave empty: libgit2, creating `refs/turnback/main/sessions` one level at a time, then
finds a parent it just saw gone ("failed to make directory"), where git retries
(`raceproof_create_file`). A turnback operation racing the user's git commands retries
too, and only after `REF_LOCK_WAIT` says the repository is busy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pygit2

from ..errors import Busy, StorageFailed
from . import faults

#: How long a ref lock held by git is waited for: git's own default is 100 ms; gc's
#: pack-refs on a large repository can take longer.
REF_LOCK_WAIT = 5.0

T = TypeVar("T")


def _raced_by_git(error: Exception) -> bool:
    """A ref lock git holds, or a parent directory its `pack-refs` pruned."""
    text = str(error).lower()
    pruned = "failed to make directory" in text and "no such file or directory" in text
    return pruned or "lock" in text or "exists" in text


def with_ref_lock_retry(action: Callable[[], T], what: str) -> T:
    deadline = time.monotonic() + REF_LOCK_WAIT
    delay = 0.01
    while True:
        try:
            return action()
        except (OSError, pygit2.GitError) as error:
            raced = _raced_by_git(error)
            if not raced or time.monotonic() > deadline:
                if raced:
                    raise Busy(f"git kept {what} busy for {REF_LOCK_WAIT:.0f} s") from error
                if isinstance(error, OSError):
                    raise StorageFailed.from_os_error(error) from error
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def set_ref(repo: pygit2.Repository, name: str, target: pygit2.Oid, step: str) -> None:
    with_ref_lock_retry(lambda: repo.references.create(name, target, force=True), name)
    faults.step(step)


def delete_ref(repo: pygit2.Repository, name: str, step: str) -> bool:
    """Deletes `name` if it exists; says whether it did."""
    if name not in repo.references:
        return False
    with_ref_lock_retry(lambda: repo.references.delete(name), name)
    faults.step(step)
    return True
