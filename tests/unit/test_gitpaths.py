"""File names that are not UTF-8, and the index-built trees that carry them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import GIT_ENV, make_repo
from turnback.core.gitpaths import path_is_ignored, tree_from_index
from turnback.core.repository import open_workspace
from turnback.core.treeops import Entry, _tree_with
from turnback.snapshot.userindex import UserIndex

#: Prefix-free, so any subset is a valid tree.
BASE_PATHS = ["a/x", "a/y", "a/c/z", "b/x", "top", "d/e/f"]
#: Also files replacing directories ("a", "a/c") and directories replacing files ("top/q").
CHANGE_PATHS = BASE_PATHS + ["a", "a/c", "a/c/w", "top/q", "new/deep/file", "b"]


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("trees")), bare=True)


def _entry(repo: pygit2.Repository, content: int, executable: bool) -> Entry:
    mode = pygit2.GIT_FILEMODE_BLOB_EXECUTABLE if executable else pygit2.GIT_FILEMODE_BLOB
    return Entry(str(repo.create_blob(b"%d\n" % content)), mode)


contents = st.tuples(st.integers(0, 3), st.booleans())


# Ensures the index-built tree (used when a name is not UTF-8) is exactly the tree the
# path-wise builder makes, for any changes, including files and directories replacing
# each other.
@settings(max_examples=150, deadline=None)
@given(
    base=st.dictionaries(st.sampled_from(BASE_PATHS), contents),
    changes=st.dictionaries(st.sampled_from(CHANGE_PATHS), st.none() | contents),
)
def test_index_built_tree_matches_the_path_wise_builder(bare, base, changes):
    repo = bare
    base_tree = repo[_tree_with(repo, None, {p: _entry(repo, *c) for p, c in base.items()})]
    wanted = {p: (_entry(repo, *c) if c else None) for p, c in changes.items()}
    assert tree_from_index(repo, base_tree, wanted) == _tree_with(repo, base_tree, wanted)


# Ensures ignore rules apply to names that are not UTF-8 as git applies them.
def test_ignore_rules_for_names_that_are_not_utf8(tmp_path: Path):
    repo_dir = make_repo(tmp_path / "repo", {".gitignore": "*.log\ncaf?.txt\nbuild*/\n"})
    repo = pygit2.Repository(str(repo_dir))
    names = [b"x\xff.log", b"caf\xe9.txt", b"caf\xe9\xe9.txt", b"build\x80/a", b"keep\xfe.txt"]
    for name in names:
        full = os.path.join(os.fsencode(repo_dir), name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        Path(os.fsdecode(full)).write_text("x\n")
    for name in names:
        check = subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", name],
            cwd=repo_dir,
            env=GIT_ENV,
            check=False,
        )
        assert path_is_ignored(repo, os.fsdecode(name)) == (check.returncode == 0), name


# Ensures removing a path below a file leaves the file (a late event for `top/q` after
# `top` became a file must not drop `top` from the snapshot).
def test_removing_below_a_file_keeps_the_file(bare):
    top = _entry(bare, 1, False)
    base = bare[_tree_with(bare, None, {"top": top})]
    for build in (_tree_with, tree_from_index):
        assert build(bare, base, {"top/q": None}) == base.id, build.__name__


# Ensures the user index's tracked-directory answer (a binary search over entry paths)
# agrees with the index's tree for every directory, including names sorting around "/".
def test_tracked_directories_match_the_index_tree(tmp_path: Path):
    files = {f: "x\n" for f in ["a/b/c.txt", "a-b/x", "a.b", "ab/y", "z/é/q", "a/b!/w"]}
    repo_dir = make_repo(tmp_path / "repo", files)
    index = UserIndex(open_workspace(repo_dir))
    index.refresh()
    tree = index.tree
    assert tree is not None
    for rel in ["a", "a/b", "a-b", "a.b", "ab", "z", "z/é", "a/b!", "b", "a/b/c.txt", "a/c", "zz"]:
        try:
            expected = tree[rel].type == pygit2.GIT_OBJECT_TREE
        except KeyError:
            expected = False
        assert index.tracks_dir(rel) == expected, rel
