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

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pygit2

from ..errors import Busy, StorageFailed
from . import faults
from .repository import common_dir

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
    try:
        with_ref_lock_retry(lambda: repo.references.create(name, target, force=True), name)
    except pygit2.GitError as error:
        if not is_damaged_ref(error) or set_aside_damaged_ref(repo, name) is None:
            raise
        with_ref_lock_retry(lambda: repo.references.create(name, target, force=True), name)
    _drop_reflog(repo, name)
    faults.step(step)


def _drop_reflog(repo: pygit2.Repository, name: str) -> None:
    """Removes the reflog libgit2 keeps of one of turnback's refs where the user's config
    says `core.logAllRefUpdates=always`: it named every capture's commit, so `git gc` kept
    what `turnback prune` let go (a secret file in a pruned turn) until reflogs expire."""
    if name.startswith("refs/turnback/"):
        log = common_dir(Path(repo.path)) / "logs" / name
        if os.path.lexists(log):
            with contextlib.suppress(OSError):
                log.unlink()


def delete_ref(repo: pygit2.Repository, name: str, step: str) -> bool:
    """Deletes `name` if it exists; says whether it did."""
    if name not in repo.references:
        return False
    with_ref_lock_retry(lambda: repo.references.delete(name), name)
    faults.step(step)
    return True


def is_damaged_ref(error: Exception) -> bool:
    """libgit2's answer for a loose ref file that does not parse (an empty file, say)."""
    return "corrupted loose reference" in str(error)


def set_aside_damaged_ref(repo: pygit2.Repository, name: str) -> Path | None:
    """Moves one of turnback's own loose ref files that does not parse out of the refs
    (libgit2 can neither read, replace nor delete it) into the repository's
    `turnback/damaged-refs`, never deleting its bytes; where it went, None if nowhere."""
    if not name.startswith("refs/turnback/"):
        return None
    common = common_dir(Path(repo.path))
    loose = common / name
    if not loose.is_file():
        return None
    aside = common / "turnback" / "damaged-refs"
    aside.mkdir(parents=True, exist_ok=True)
    moved = aside / f"{name.replace('/', '%')}.{time.time_ns()}"
    os.replace(loose, moved)
    return moved


def set_aside_ref(repo: pygit2.Repository, name: str) -> str:
    """Moves a ref of turnback's whose contents do not read out of the way, keeping what
    it names: renamed under `refs/turnback/retired/damaged-<time>/` when the ref itself
    parses, else its file moved (see above). Returns where it went."""
    aside = f"refs/turnback/retired/damaged-{time.time_ns()}/{name.removeprefix('refs/turnback/')}"
    try:
        ref = repo.references.get(name)
        if ref is None:
            return name
        set_ref(repo, aside, ref.target, "set aside a damaged ref")
    except pygit2.GitError:  # the file does not parse, or names an object that does not read
        moved = set_aside_damaged_ref(repo, name)
        if moved is None:
            raise
        return str(moved)
    delete_ref(repo, name, "set aside a damaged ref")
    return aside
