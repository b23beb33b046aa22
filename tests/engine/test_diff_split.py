"""A turn's diff split with a forked child (diff/forked.py) is the diff computed in one process."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import git, make_repo, write
from turnback.diff import forked
from turnback.engine import Engine

pytestmark = pytest.mark.skipif(
    not forked.can_fork(), reason="forks only on Linux with 2+ CPUs, not in portable mode"
)


def numbered(name: str, count: int) -> str:
    return "".join(f"{name} line {i}\n" for i in range(count))


# Ensures every kind of change (edited, added, deleted, renamed, binary, no final newline)
# comes back the same, in the same order, when a child diffs part of the turn.
def test_split_diff_is_the_one_process_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"src/m{i}.py": numbered(f"m{i}", 400) for i in range(6)}
    files["old_name.txt"] = numbered("moved", 50)
    files["gone.txt"] = "bye\n"
    root = make_repo(tmp_path / "repo", files)
    engine = Engine(str(root))
    engine.capture(session="s")
    for i in range(6):
        text = numbered(f"m{i}", 400).replace(f"m{i} line 7\n", "edited\n")
        write(root, f"src/m{i}.py", text.rstrip("\n") if i == 2 else text)
    git(root, "mv", "old_name.txt", "new_name.txt")
    (root / "gone.txt").unlink()
    write(root, "new.bin", b"\0binary")
    write(root, "new.txt", numbered("new", 30))
    engine.capture(session="s", phase="after")

    forks: list[int] = []
    real_fork = forked._fork_for

    def counted(shares):  # the real fork, counted
        forks.append(len(shares))
        return real_fork(shares)

    monkeypatch.setattr(forked, "_fork_for", counted)
    monkeypatch.setattr(forked, "FORK_FROM_BYTES", 1 << 60)
    alone = engine.diff("s", None)
    monkeypatch.setattr(forked, "FORK_FROM_BYTES", 0)
    split = engine.diff("s", None)

    assert forks and forks[0] >= 1
    assert split == alone
    statuses = {f.path: f.status for f in split.files}
    assert statuses["new_name.txt"] == "renamed" and statuses["gone.txt"] == "deleted"
    assert next(f for f in split.files if f.path == "new.bin").binary
    engine.close()
