"""Which ref-write failures are git racing turnback (retried) and which are not (raised).

The race itself cannot be produced on demand: `git pack-refs --prune` removing an empty
`refs/turnback/main` between two of libgit2's `mkdir` calls happened once in 729
operations of tests/reliability/test_concurrency.py. So the action here fails as libgit2
did there, word for word, and then succeeds.
"""

from __future__ import annotations

import pytest

from turnback.core.gitrefs import with_ref_lock_retry
from turnback.errors import StorageFailed

PRUNED_PARENT = OSError(
    "failed to make directory '/tmp/repo/.git/refs/turnback/main/sessions': "
    "No such file or directory"
)


def failing_once(error: Exception) -> tuple[list[int], object]:
    calls: list[int] = []

    def action() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise error
        return "written"

    return calls, action


# Fails when a parent directory pruned by git's pack-refs ends the capture with an error.
def test_a_parent_directory_pruned_by_git_is_retried():
    calls, action = failing_once(PRUNED_PARENT)
    assert with_ref_lock_retry(action, "refs/turnback/main/sessions/beta") == "written"
    assert len(calls) == 2


# Fails when any missing directory is retried: a work tree that is gone must say so at once,
# as the file system's refusal (storageFailed), not as a bug.
def test_other_missing_paths_are_not_retried():
    calls, action = failing_once(OSError("could not open '/gone/.git/HEAD': No such file"))
    with pytest.raises(StorageFailed, match="could not open"):
        with_ref_lock_retry(action, "refs/turnback/main/sessions/beta")
    assert len(calls) == 1
