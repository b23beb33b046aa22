"""The ignore rules from outside the work tree, as a snapshot commit records them, and how
a restore judges a path by them."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from helpers import git, make_repo
from turnback.core.gitpaths import path_is_ignored
from turnback.core.repository import open_workspace
from turnback.snapshot.ignore_rules import WorkspaceIgnoreRules
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


# Ensures a relative core.excludesFile is read from the work tree's top, as git and libgit2
# read it, whatever folder the process runs in (the daemon's is /).
def test_relative_excludes_file_is_read_from_the_top(repo: Path, tmp_path, monkeypatch):
    (repo / ".myignore").write_text("secret.txt\n")
    git(repo, "config", "core.excludesFile", ".myignore")
    monkeypatch.chdir(tmp_path)
    assert outside_patterns(open_workspace(repo)) == ["secret.txt"]


# Ensures the rules read back from a commit are those written, and that a commit without
# the line (an older turnback's), or with a label that only looks like it, names none.
def test_patterns_round_trip_through_a_commit(repo: Path):
    rules = {"": ["*.env", "build/", 'we"ird\\name'], "sub": []}
    written = commit_with(repo, with_patterns("turnback: before turn 1\n", rules))
    assert patterns_at(pygit2.Repository(str(repo)), written) == rules
    older = commit_with(repo, "turnback: before turn 1\n")
    assert patterns_at(pygit2.Repository(str(repo)), older) is None
    spoofed = commit_with(repo, 'Turnback-Excludes: {"": ["*"]}\nlabel: a prompt\n')
    assert patterns_at(pygit2.Repository(str(repo)), spoofed) is None
    assert patterns_at(pygit2.Repository(str(repo)), None) is None


# Ensures each path is judged by the repository holding it, its patterns matched from that
# repository's top as git matches them: a global `/local.cfg` ignores sub/local.cfg in the
# nested repository sub, and not the root's own sub2/local.cfg.
def test_each_path_is_judged_by_its_own_repository(repo: Path):
    rules = WorkspaceIgnoreRules(
        pygit2.Repository(str(repo)), None, {"": ["/top.cfg"], "sub": ["/local.cfg", "conf/x"]}
    )
    assert rules.is_ignored("sub/local.cfg") and rules.is_ignored("sub/conf/x")
    assert not rules.is_ignored("local.cfg") and not rules.is_ignored("sub2/local.cfg")
    assert rules.is_ignored("top.cfg") and not rules.is_ignored("sub/top.cfg")


# Ensures a pattern with a trailing tab ignores what libgit2 (whose scan decides what a
# capture leaves out) ignores: a restore must judge as the capture did.
def test_trailing_tab_is_judged_as_libgit2_judges_it(repo: Path):
    (repo / ".git/info").mkdir(exist_ok=True)
    (repo / ".git/info/exclude").write_text("*.log\t\n")
    (repo / "deep.log").write_text("x\n")
    libgit2 = path_is_ignored(pygit2.Repository(str(repo)), "deep.log")
    ours = WorkspaceIgnoreRules(pygit2.Repository(str(repo)), None, {"": ["*.log\t"]})
    assert ours.is_ignored("deep.log") == libgit2 is True
