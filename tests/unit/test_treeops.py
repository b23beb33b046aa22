"""changed_paths walks only the subtrees that differ, and names what libgit2's diff names;
entries_at answers what entry_at answers, path by path."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygit2.enums import FileMode

from helpers.trees import drop_loose_object, tree_of
from turnback.core import treeops
from turnback.core.pygit2_internals import STRICT_UTF8_PATHS, is_missing_object
from turnback.core.treeops import changed_paths, entries_at, entry_at

#: Files replacing directories ("a", "a/c"), directories replacing files ("top/q"), and a
#: name that is not UTF-8 (where pygit2 takes one: not 1.18, Python 3.10's last).
PATHS = ["a/x", "a/y", "a/c/z", "a/c", "a", "b/x", "top", "top/q", "d/e/f"]
PATHS += [] if STRICT_UTF8_PATHS else ["n/\udcff.bin"]
MODES = [FileMode.BLOB, FileMode.BLOB_EXECUTABLE, FileMode.LINK, FileMode.COMMIT]


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("trees")), bare=True)


def _libgit2_paths(repo: pygit2.Repository, old: pygit2.Tree, new: pygit2.Tree) -> set[str]:
    deltas = repo.diff(old, new).deltas
    return {d.old_file.path for d in deltas} | {d.new_file.path for d in deltas}


#: Paths no tree here holds: under a file or a directory, missing, empty components.
ASKED_TOO = ["a/c/z/w", "zz", "d/e", "/top", "a//x", "a/", ""]

files = st.dictionaries(
    st.sampled_from(PATHS), st.tuples(st.integers(0, 2), st.sampled_from(MODES)), max_size=8
)


# Ensures the pruned walk names exactly the paths libgit2's full tree-to-tree diff names,
# through files becoming directories, mode changes, symlinks, submodules and non-UTF-8 names.
@settings(max_examples=300, deadline=None)
@given(before=files, after=files)
def test_changed_paths_match_libgit2(bare, before, after):
    old, new = tree_of(bare, before), tree_of(bare, after)
    assert changed_paths(bare, old, new) == _libgit2_paths(bare, old, new)


# Ensures the batched lookup equals entry_at for every kind of path: files, symlinks and
# submodules, directories, paths under a file, missing ones, empty components and
# non-UTF-8 names.
@settings(max_examples=300, deadline=None)
@given(tree_files=files, asked=st.lists(st.sampled_from(PATHS + ASKED_TOO)))
def test_entries_at_matches_entry_at(bare, tree_files, asked):
    tree = tree_of(bare, tree_files)
    assert entries_at(tree, asked) == {path: entry_at(tree, path) for path in asked}
    assert entries_at(None, asked) == dict.fromkeys(asked)


# Ensures a path under a subtree whose object is gone is an error, as in entry_at, never
# "no such file" (a restore would delete what it could not read).
def test_entries_at_under_a_missing_subtree_raises(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path), bare=True)
    tree = tree_of(repo, {"a/x": (1, FileMode.BLOB), "top": (2, FileMode.BLOB)})
    repo = drop_loose_object(tmp_path, tree["a"].id)
    tree = repo[tree.id]
    with pytest.raises((KeyError, pygit2.GitError)) as missing:  # 1.19+: NotFoundError, both
        entry_at(tree, "a/x")
    assert is_missing_object(missing.value)
    with pytest.raises((KeyError, pygit2.GitError)) as missing:
        entries_at(tree, ["top", "a/x"])
    assert is_missing_object(missing.value)


# Ensures one missing side means every file of the other side.
def test_changed_paths_against_nothing(bare):
    tree = tree_of(bare, {"a/x": (1, FileMode.BLOB), "top": (2, FileMode.BLOB)})
    assert changed_paths(bare, None, tree) == {"a/x", "top"}
    assert changed_paths(bare, tree, None) == {"a/x", "top"}
    assert changed_paths(bare, None, None) == set()


# Ensures a subtree both sides share is never read: its object is gone, and the walk still
# answers (libgit2's diff reads every tree of both sides, so it fails here).
def test_shared_subtree_is_not_read(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path), bare=True)
    shared = {f"big/{n}": (n, FileMode.BLOB) for n in range(5)}
    old = tree_of(repo, {**shared, "top": (1, FileMode.BLOB)})
    new = tree_of(repo, {**shared, "top": (2, FileMode.BLOB)})
    repo = drop_loose_object(tmp_path, old["big"].id)
    old, new = repo[old.id], repo[new.id]
    assert changed_paths(repo, old, new) == {"top"}
    with pytest.raises((KeyError, pygit2.GitError)):
        repo.diff(old, new).deltas  # noqa: B018


# Ensures a turn that changed more directories than the walk's budget gets libgit2's
# answer: the same paths.
def test_many_changed_directories_fall_back_to_libgit2(bare, monkeypatch):
    before = {f"d{n}/sub/f": (0, FileMode.BLOB) for n in range(6)}
    after = {f"d{n}/sub/f": (1, FileMode.BLOB) for n in range(6)} | {"new/x": (0, FileMode.LINK)}
    old, new = tree_of(bare, before), tree_of(bare, after)
    expected = {f"d{n}/sub/f" for n in range(6)} | {"new/x"}
    diffed, libgit2 = [], treeops._diffed_paths
    monkeypatch.setattr(treeops, "_diffed_paths", lambda *a: diffed.append(a) or libgit2(*a))
    assert changed_paths(bare, old, new) == expected and not diffed  # within the budget
    monkeypatch.setattr(treeops, "WALK_BUDGET", 3)
    assert changed_paths(bare, old, new) == expected and diffed
