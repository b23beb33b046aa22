"""A SIGKILL in the middle of an undo spanning two repositories: one journal for the whole
restore, so after recovery both repositories end on the same side."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from helpers import SERVER_ENV, cli_json, make_repo, tree_state, write
from helpers.workspace import repo_git_state

FILES = 1000


def _sides(root: Path) -> tuple[dict, dict]:
    """The files of both repositories, and their git state (status, HEAD, index...)."""
    names = ("api", "web")
    return {n: tree_state(root / n) for n in names}, {n: repo_git_state(root / n) for n in names}


def _two_big_repositories(root: Path) -> tuple[Path, tuple, tuple]:
    """A folder of `api` and `web`, 1,000 files each, and a sealed turn rewriting them all."""
    root.mkdir(parents=True)
    for name in ("api", "web"):
        make_repo(root / name, {f"d{i % 10}/f{i}.txt": f"{name} {i}\n" for i in range(FILES)})
    before = _sides(root)
    cli_json(root, "capture", "--label", "big")
    for name in ("api", "web"):
        for i in range(FILES):
            write(root / name, f"d{i % 10}/f{i}.txt", f"{name} {i} edited by the agent\n")
    cli_json(root, "capture", "--phase", "after")
    return root, before, _sides(root)


# Ensures an undo killed while writing the first repository, the second, or at the commit
# point is recovered by the next command to one side in both repositories, whose git
# state never changed.
def test_undo_killed_across_two_repositories(tmp_path: Path):
    # The journal is step 1; each file is two steps (staged, written), api's files first;
    # then the timeline ref (the commit point). Killed mid-api, mid-web, at the commit.
    sides = set()
    for step in (FILES, 3 * FILES, 4 * FILES + 2):
        root, before, after = _two_big_repositories(tmp_path / f"at{step}")
        done = subprocess.run(
            [sys.executable, "-m", "turnback", "undo"],
            cwd=root,
            env={**SERVER_ENV, "TURNBACK_FAULT_AFTER": str(step)},
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == -signal.SIGKILL, f"step {step} was never reached"
        listing = cli_json(root, "list")  # the next command recovers first
        state = _sides(root)  # files and git status agree: HEAD, index, refs never moved
        assert state in (before, after), f"killed at step {step}: a mix of states"
        assert listing["turns"][0]["state"] == ("undone" if state == before else "active")
        sides.add(state == before)
    assert sides == {True, False}  # both recoveries were exercised: rolled back, finished
