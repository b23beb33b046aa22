"""turn_deltas reports exactly what libgit2's diff with rename detection reports."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygit2.enums import FileMode

from helpers.trees import drop_loose_object, tree_of
from turnback.core.pygit2_internals import STRICT_UTF8_PATHS
from turnback.diff.turndiff import (
    changed_files,
    diff_trees,
    libgit2_deltas,
    relative_path,
    turn_deltas,
)
from turnback.errors import InvalidParams

#: Names whose full paths sort apart from their directories ("a.c" < "a/x" < "a0", as
#: git's tree order has it), files replacing directories ("a", "a/c"), directories
#: replacing files ("top", "top/q"), a non-ASCII name and one that is not UTF-8 (where
#: pygit2 takes one: not 1.18, Python 3.10's last).
PATHS = ["a/x", "a/c/z", "a/c", "a", "a.c", "a0", "a-b/x", "top", "top/q", "é/f"]
PATHS += [] if STRICT_UTF8_PATHS else ["n/\udcff"]
MODES = [FileMode.BLOB, FileMode.BLOB_EXECUTABLE, FileMode.LINK, FileMode.COMMIT]


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path_factory.mktemp("turns")), bare=True)


@pytest.fixture(scope="module", params=["true", "copies", "false"])
def renames(request, tmp_path_factory) -> pygit2.Repository:
    """A repository whose `diff.renames` finds renames, renames and copies, or neither."""
    repo = pygit2.init_repository(str(tmp_path_factory.mktemp("renames")), bare=True)
    repo.config["diff.renames"] = request.param
    return repo


def _tree(repo: pygit2.Repository, files: dict[str, tuple[int, int]]) -> pygit2.Tree:
    # Contents long enough for rename detection to pair a deleted file with an added one.
    return tree_of(repo, files, lambda n: b"line\n" * 20 + b"%d\n" % n)


files = st.dictionaries(
    st.sampled_from(PATHS), st.tuples(st.integers(0, 2), st.sampled_from(MODES)), max_size=8
)
#: Edits in place only (content and the executable bit), the shape the fast path takes.
in_place = st.dictionaries(
    st.sampled_from(PATHS),
    st.tuples(st.integers(0, 2), st.sampled_from([FileMode.BLOB, FileMode.BLOB_EXECUTABLE])),
    max_size=8,
)


# Ensures any pair of trees (renames, copies, type changes, submodules, files becoming
# directories, odd names) gives libgit2's deltas, in its order, whatever `diff.renames` says.
@settings(max_examples=200, deadline=None)
@given(before=files, after=files)
def test_deltas_match_libgit2(renames, before, after):
    old, new = _tree(renames, before), _tree(renames, after)
    assert turn_deltas(renames, old, new) == libgit2_deltas(renames, old, new)


# Ensures edits in place, the fast path's shape, give libgit2's deltas and order.
@settings(max_examples=200, deadline=None)
@given(before=in_place, data=st.data())
def test_edits_in_place_match_libgit2(bare, before, data):
    regular = st.sampled_from([FileMode.BLOB, FileMode.BLOB_EXECUTABLE])
    after = {path: (data.draw(st.integers(0, 2)), data.draw(regular)) for path in before}
    old, new = _tree(bare, before), _tree(bare, after)
    assert turn_deltas(bare, old, new) == libgit2_deltas(bare, old, new)


# Ensures a turn with no earlier tree lists every file as added.
def test_first_turn_adds_everything(bare):
    new = _tree(bare, {"a/x": (1, FileMode.BLOB), "top": (2, FileMode.LINK)})
    assert [(f.path, f.status) for f in changed_files(bare, None, new)] == [
        ("a/x", "added"),
        ("top", "added"),
    ]


# Ensures a turn that edits one file and adds another never reads a subtree both sides
# share (its object is gone here; libgit2's diff reads every tree and fails), and still
# diffs both files.
def test_edits_and_additions_skip_shared_subtrees(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path), bare=True)
    shared = {f"big/{n}": (n, FileMode.BLOB) for n in range(5)}
    old = _tree(repo, {**shared, "top": (1, FileMode.BLOB)})
    new = _tree(repo, {**shared, "top": (2, FileMode.BLOB), "new/file": (0, FileMode.BLOB)})
    repo = drop_loose_object(tmp_path, old["big"].id)
    old, new = repo[old.id], repo[new.id]
    diffed = diff_trees(repo, old, new, None, 3)
    assert [(d.path, d.status, d.additions, d.deletions) for d in diffed] == [
        ("new/file", "added", 21, 0),
        ("top", "modified", 1, 1),
    ]
    with pytest.raises((KeyError, pygit2.GitError)):
        libgit2_deltas(repo, old, new)


# Ensures a file added beside the edited file it copies is an addition, also when
# `diff.renames = copies` pairs them in libgit2 (it was "modified", with the other
# file's hunks under its own name, a status protocol.md does not have for a new file).
@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("true", [("modified", "a", "a"), ("added", "b", "b")]),
        ("copies", [("modified", "a", "a"), ("added", "b", "b")]),
    ],
)
def test_an_added_copy_is_an_addition(tmp_path: Path, rule: str, expected: list):
    repo = pygit2.init_repository(str(tmp_path), bare=True)
    repo.config["diff.renames"] = rule
    old = _tree(repo, {"a": (0, FileMode.BLOB)})
    new = _tree(repo, {"a": (1, FileMode.BLOB), "b": (0, FileMode.BLOB)})
    deltas = turn_deltas(repo, old, new)
    assert [(d.status, d.old_path, d.new_path) for d in deltas] == expected
    assert deltas == libgit2_deltas(repo, old, new)


# Ensures every spelling of a path inside the workspace names it: `..` inside it (refused
# as outside), `file://localhost/`, RFC 8089's `file:/x`, an upper-case scheme (matched
# nothing), and an escaped byte that is not UTF-8, which reads back as the PEP 383 escape
# turnback's own results use (it read as U+FFFD, so its own `workTree` failed).
@pytest.mark.parametrize(
    "spelled",
    [
        "sub/../f.txt",
        "/ws/sub/../f.txt",
        "file:///ws/sub/../f.txt",
        "file://localhost/ws/f.txt",
        "file:/ws/f.txt",
        "FILE:///ws/f.txt",
    ],
)
def test_path_spellings_inside_the_workspace(spelled: str):
    assert relative_path(Path("/ws"), spelled) == "f.txt"


# Ensures the same for an escaped byte that is not UTF-8, and that `..` past the root is
# still outside.
def test_escaped_bytes_that_are_not_utf8():
    assert relative_path(Path("/ws"), "file:///ws/caf%E9.txt") == "caf\udce9.txt"
    with pytest.raises(InvalidParams):
        relative_path(Path("/ws"), "sub/../../f.txt")
