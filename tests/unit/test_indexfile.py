"""Reading index files from their bytes agrees with libgit2 on indexes real git wrote."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2

from helpers import git, make_repo
from turnback.core import indexfile
from turnback.snapshot.seedcheck import _untrusted_in, untrusted_entries

LONG = "/".join(["d" * 200] * 21) + "/long.txt"  # 4,000+ bytes: past the 12-bit name length


def _repo(tmp_path: Path, long_path: bool = True) -> Path:
    root = make_repo(
        tmp_path / "repo",
        {
            ".gitattributes": "*.md linguist-documentation\n",
            "sub/.gitattributes": "*.txt -diff\n",
            "sub/not.gitattributes": "a file whose name only ends like one\n",
            "a.txt": "a\n",
            "flagged/skip.txt": "s\n",
            "flagged/assume.txt": "u\n",
        },
    )
    commit = git(root, "rev-parse", "HEAD").strip()
    blob = git(root, "rev-parse", "HEAD:a.txt").strip()
    if long_path:  # too long for the file system: only the index holds it
        git(root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{LONG}")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{commit},vendor/lib")
    git(root, "update-index", "--skip-worktree", "flagged/skip.txt")  # makes it version 3
    git(root, "update-index", "--assume-unchanged", "flagged/assume.txt")
    return root


def _libgit2_view(index_file: Path) -> tuple[list[str], list[str]]:
    index = pygit2.Index(str(index_file))
    every = [e.path for e in index]
    return every, [p for p in every if p.rpartition("/")[2] == ".gitattributes"]


# Proves flags, gitlinks, attribute files and a path longer than 4,095 bytes are read as
# libgit2 reads them, on the version-3 index git writes once an entry is skip-worktree.
def test_bytes_agree_with_libgit2(tmp_path: Path):
    root = _repo(tmp_path)
    data = (root / ".git" / "index").read_bytes()
    assert int.from_bytes(data[4:8], "big") == 3
    found = indexfile.seed_facts(data)
    assert found is not None
    flagged, attributes = ([os.fsdecode(p) for p in part] for part in found[:2])
    every, expected_attributes = _libgit2_view(root / ".git" / "index")
    assert sorted(flagged) == ["flagged/assume.txt", "flagged/skip.txt"]
    assert (
        sorted(attributes)
        == sorted(expected_attributes)
        == [".gitattributes", "sub/.gitattributes"]
    )
    assert [os.fsdecode(p) for p in indexfile.paths(data)] == [
        p for p in every if p != "vendor/lib"
    ]
    assert LONG in every and indexfile.count(data) == len(every)


# Proves a version-4 index (prefix-compressed paths) is declined, and the seed check then
# gives the same answer through libgit2 (which cannot read a long path in version 4).
def test_version_4_falls_back_to_libgit2(tmp_path: Path):
    root = _repo(tmp_path, long_path=False)
    git(root, "update-index", "--index-version", "4")
    index_file = root / ".git" / "index"
    assert indexfile.seed_facts(index_file.read_bytes()) is None
    repo = pygit2.Repository(str(root))
    index = pygit2.Index(str(index_file))
    common = root / ".git"
    assert untrusted_entries(repo, index, index_file, root, common) == _untrusted_in(
        repo, index, root, common
    )
    assert untrusted_entries(repo, index, index_file, root, common) == [
        "flagged/assume.txt",
        "flagged/skip.txt",
    ]


# Proves a truncated file is declined rather than read past its end.
def test_truncated_file_is_declined(tmp_path: Path):
    data = (_repo(tmp_path) / ".git" / "index").read_bytes()
    assert indexfile.seed_facts(data[: len(data) // 2]) is None


# Proves the cache-tree's root is read as git leaves it: valid after a commit, void after
# `git add`, absent from an index libgit2 wrote without one.
def test_cached_root_tree_as_git_leaves_it(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {"a.txt": "a\n", "d/b.txt": "b\n"})
    index_file = root / ".git" / "index"
    assert indexfile.seed_facts(index_file.read_bytes())[2] is True
    (root / "c.txt").write_text("c\n")
    git(root, "add", "c.txt")
    assert indexfile.seed_facts(index_file.read_bytes())[2] is False
    git(root, "write-tree")  # fills the cache-tree in again
    assert indexfile.seed_facts(index_file.read_bytes())[2] is True
    bare = tmp_path / "libgit2-index"
    pygit2.Index(str(bare)).write()
    assert indexfile.seed_facts(bare.read_bytes()) == ([], [], False)
