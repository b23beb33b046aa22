"""The ignore rules from outside the work tree, as a snapshot commit records them."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from helpers import git, make_repo
from turnback.core.repository import open_workspace
from turnback.snapshot.outside_rules import outside_patterns, patterns_at, with_patterns


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def commit_with(root: Path, message: str) -> str:
    repo = pygit2.Repository(str(root))
    sig = pygit2.Signature("t", "t@example.com")
    return str(repo.create_commit(None, sig, sig, message, repo.head.peel().tree.id, []))


# Ensures the global excludes file comes first and info/exclude last (git's order: the
# last match wins), with comments and blank lines left out.
def test_outside_patterns_in_git_order(repo: Path, tmp_path: Path):
    global_file = tmp_path / "global-ignore"
    global_file.write_text("# mine\n*.bak\n\n!keep.bak\n")
    git(repo, "config", "core.excludesFile", str(global_file))
    (repo / ".git/info").mkdir(exist_ok=True)
    (repo / ".git/info/exclude").write_text("# git's template\nsecret.env\n")
    assert outside_patterns(open_workspace(repo)) == ["*.bak", "!keep.bak", "secret.env"]


# Ensures the rules read back from a commit are those written, and that a commit without
# the line (an older turnback's), or with a label that only looks like it, names none.
def test_patterns_round_trip_through_a_commit(repo: Path):
    rules = ["*.env", "build/", 'we"ird\\name']
    written = commit_with(repo, with_patterns("turnback: before turn 1\n", rules))
    assert patterns_at(pygit2.Repository(str(repo)), written) == rules
    older = commit_with(repo, "turnback: before turn 1\n")
    assert patterns_at(pygit2.Repository(str(repo)), older) is None
    spoofed = commit_with(repo, 'Turnback-Excludes: ["*"]\nlabel: a prompt\n')
    assert patterns_at(pygit2.Repository(str(repo)), spoofed) is None
    assert patterns_at(pygit2.Repository(str(repo)), None) is None
