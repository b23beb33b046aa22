"""Tests for turnback.snapshot.ignore_candidates: the directories libgit2 must be asked about.

libgit2's own answer (`path_is_ignored`, what the watcher trusts) is the reference: every
directory it ignores must be a candidate, or the watcher would watch an ignored build
directory; and a directory no rule names must not be one, or nothing was saved.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from helpers import git, make_repo, write
from turnback.snapshot.ignore_candidates import IgnoreCandidates

RULES = {
    ".gitignore": "\n".join(
        [
            "# names, suffixes, prefixes and wild patterns, as linux's .gitignore has them",
            "build",
            "*.egg-info",
            "cache*",
            "tmp-?",
            "[Oo]ut",
            "/top-only/",
            "docs/generated/",
            "deep/**/gen",
            "**/logs",
            "keep*",
            "!keepme",
            r"\#weird#",
        ]
    ),
    "sub/.gitignore": "local\n/anchored-here\n",
    "a.txt": "a\n",
}
DIRECTORIES = [
    "src",
    "src/build",
    "pkg.egg-info",
    "cache-1",
    "tmp-x",
    "tmp-xy",
    "Out",
    "top-only",
    "src/top-only",
    "docs/generated",
    "docs/other",
    "deep/a/b/gen",
    "src/logs",
    "keepme",
    "keeper",
    "#weird#",
    "sub/local",
    "sub/anchored-here",
    "sub/x/anchored-here",
    "other/local",
    "build/inner",
    "excluded-by-info",
    "excluded-globally",
]


def _repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", RULES)
    for rel in DIRECTORIES:
        write(repo, f"{rel}/f.txt", "x\n")
    write(repo, ".git/info/exclude", "excluded-by-info\n")
    write(tmp_path, "global-ignore", "excluded-globally\n")
    git(repo, "config", "core.excludesFile", str(tmp_path / "global-ignore"))
    return repo


def _candidates(repo: Path, tmp_path: Path, ignore_case: bool = False) -> IgnoreCandidates:
    files = [repo / ".git/info/exclude", tmp_path / "global-ignore"]
    return IgnoreCandidates(repo, files, ignore_case)


# Ensures every directory libgit2 ignores is a candidate, and the plain ones are not.
def test_every_ignored_directory_is_a_candidate(tmp_path: Path):
    repo = _repo(tmp_path)
    libgit2 = pygit2.Repository(str(repo))
    candidates = _candidates(repo, tmp_path)
    ignored = {d for d in DIRECTORIES if libgit2.path_is_ignored(d + "/")}
    assert {"src/build", "Out", "deep/a/b/gen", "sub/local", "excluded-globally"} <= ignored
    assert {d for d in ignored if not candidates.may_be_ignored(d)} == set()
    plain = {"src", "docs/other", "tmp-xy", "src/top-only", "other/local", "sub/x/anchored-here"}
    assert plain.isdisjoint(ignored)
    assert {d for d in plain if candidates.may_be_ignored(d)} == set()


# Ensures a negated pattern still leaves its directory a candidate (libgit2 decides), and
# everything below an ignored directory is one.
def test_negations_and_ignored_parents_stay_candidates(tmp_path: Path):
    repo = _repo(tmp_path)
    candidates = _candidates(repo, tmp_path)
    assert candidates.may_be_ignored("keepme")  # `keep*` matches; `!keepme` is libgit2's call
    assert candidates.may_be_ignored("build/inner")  # below an ignored directory
    assert not pygit2.Repository(str(repo)).path_is_ignored("keepme/")


# Ensures core.ignoreCase rules match whatever the case of the name or the pattern.
def test_ignore_case_folds_names_and_patterns(tmp_path: Path):
    repo = _repo(tmp_path)
    assert not _candidates(repo, tmp_path).may_be_ignored("BUILD")
    folded = _candidates(repo, tmp_path, ignore_case=True)
    assert folded.may_be_ignored("BUILD")
    assert folded.may_be_ignored("Pkg.EGG-INFO")
    assert not folded.may_be_ignored("SRC")
