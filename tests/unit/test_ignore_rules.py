"""Tests for turnback.snapshot.ignore_rules: gitignore rules evaluated from a git tree object.

Every case is checked against explicit expectations and, when the git CLI is available, against
`git check-ignore --no-index` run on a checked-out copy of the same files, so the matcher is
proven against git itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import FileMode

from turnback.snapshot.ignore_rules import TreeIgnoreRules

GIT = shutil.which("git")


def make_tree(
    repo: pygit2.Repository, files: dict[str, str], symlinks: dict[str, str] | None = None
) -> pygit2.Tree:
    """Build a real git tree holding `files` (path -> text) and `symlinks` (path -> target)."""
    index = pygit2.Index()
    for path, text in files.items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(text.encode()), FileMode.BLOB))
    for path, target in (symlinks or {}).items():
        index.add(pygit2.IndexEntry(path, repo.create_blob(target.encode()), FileMode.LINK))
    tree = repo[index.write_tree(repo)]
    assert isinstance(tree, pygit2.Tree)
    return tree


def git_ignored(
    workdir: Path,
    files: dict[str, str],
    queries: list[str],
    extra: list[str],
    symlinks: dict[str, str],
) -> set[str]:
    """Check out `files` plus empty query files into `workdir`; return what git says is ignored.

    Queries must not name a file that another query needs as a directory (git checks the disk).
    """
    subprocess.run(["git", "init", "-q", str(workdir)], check=True)
    for path in queries:
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        (workdir / path).touch()
    for path, text in files.items():
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        (workdir / path).write_text(text)
    for path, target in symlinks.items():
        (workdir / path).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, workdir / path)
    (workdir / ".git/info/exclude").write_text("".join(f"{p}\n" for p in extra))
    home = workdir.parent / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin", "-z"],
        cwd=workdir,
        input="\0".join(queries) + "\0",
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode in (0, 1), proc.stderr
    return {p for p in proc.stdout.split("\0") if p}


def check(
    tmp_path: Path,
    files: dict[str, str],
    expected: dict[str, bool],
    extra: list[str] | None = None,
    symlinks: dict[str, str] | None = None,
) -> None:
    """Assert the matcher gives `expected` for a tree of `files`, and that git agrees."""
    repo = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    rules = TreeIgnoreRules(repo, make_tree(repo, files, symlinks), extra or [])
    got = {path: rules.is_ignored(path) for path in expected}
    assert got == expected
    if GIT:
        queries = list(expected)
        ignored = git_ignored(tmp_path / "wt", files, queries, extra or [], symlinks or {})
        assert {p: p in ignored for p in queries} == expected, "git disagrees"


# Blank lines and `#` comments are no patterns; `\#` matches a literal leading '#'.
def test_comments_blank_lines_and_escaped_hash(tmp_path: Path) -> None:
    files = {".gitignore": "# comment\n\n   \n\\#hash\n*.log\n"}
    expected = {"# comment": False, "#hash": True, "x.log": True, "keep.txt": False}
    check(tmp_path, files, expected)


# Trailing spaces are stripped unless escaped with a backslash.
def test_trailing_spaces(tmp_path: Path) -> None:
    files = {".gitignore": "foo   \nbar\\ \nbaz\\  \n"}
    expected = {"foo": True, "foo ": False, "bar ": True, "bar": False, "baz ": True}
    check(tmp_path, files, expected)


# `!` negates, the last matching line wins, and `\!` matches a literal leading '!'.
def test_negation_last_match_wins(tmp_path: Path) -> None:
    files = {".gitignore": "*.log\n!keep.log\n!late.txt\nlate.txt\n\\!bang\n"}
    expected = {
        "a.log": True,
        "keep.log": False,
        "d/keep.log": False,
        "late.txt": True,
        "!bang": True,
        "bang": False,
    }
    check(tmp_path, files, expected)


# A deeper .gitignore takes precedence over a shallower one, in both directions.
def test_deeper_gitignore_takes_precedence(tmp_path: Path) -> None:
    files = {
        ".gitignore": "*.tmp\n!special\n",
        "sub/.gitignore": "!*.tmp\nspecial\n",
    }
    expected = {
        "a.tmp": True,
        "sub/a.tmp": False,
        "sub/deep/a.tmp": False,
        "other/a.tmp": True,
        "special": False,
        "sub/special": True,
        "sub/x/special": True,
    }
    check(tmp_path, files, expected)


# A leading or middle slash anchors to the .gitignore's directory; otherwise any depth.
def test_anchoring(tmp_path: Path) -> None:
    files = {
        ".gitignore": "/top\nmid/file\nanywhere\n",
        "sub/.gitignore": "/local\nin/here\n",
    }
    expected = {
        "top": True,
        "x/top": False,
        "mid/file": True,
        "x/mid/file": False,
        "anywhere": True,
        "x/y/anywhere": True,
        "sub/local": True,
        "local": False,
        "sub/x/local": False,
        "sub/in/here": True,
        "in/here": False,
    }
    check(tmp_path, files, expected)


# A trailing slash matches directories only (and so everything below them), never a file.
def test_trailing_slash_matches_directories_only(tmp_path: Path) -> None:
    files = {".gitignore": "build/\n/out/\n"}
    expected = {
        "build": False,
        "src/build/y.o": True,
        "lib/build": False,
        "x/build/z": True,
        "out/a": True,
        "src/out/a": False,
    }
    check(tmp_path, files, expected)


# `*`, `?` and `[...]` never match a '/', and bracket ranges, negations and classes work.
def test_wildcards_do_not_cross_slashes(tmp_path: Path) -> None:
    files = {".gitignore": "doc/*.txt\na?c\n[ab]x\nq[!a-c]\nn[[:digit:]]\nr[]]\n[z-a]v\n"}
    expected = {
        "doc/a.txt": True,
        "doc/sub/a.txt": False,
        "abc": True,
        "d/a/c": False,
        "ax": True,
        "bx": True,
        "cx": False,
        "qa": False,
        "qz": True,
        "n7": True,
        "nx": False,
        "r]": True,
        "zv": True,  # git quirk: a reversed range still matches its first character
        "av": False,
    }
    check(tmp_path, files, expected)


# A pattern ending in a lone backslash is one git never matches (it does not fail the file).
def test_trailing_backslash_never_matches(tmp_path: Path) -> None:
    check(tmp_path, {".gitignore": "foo\\\n*.o\n"}, {"foo": False, "foo\\": False, "a.o": True})


# `**` in leading, trailing and middle positions spans any number of directories.
def test_double_star_forms(tmp_path: Path) -> None:
    files = {".gitignore": "**/foo\nbar/**\na/**/b\nx**y\npre**/z\n"}
    expected = {
        "foo": True,
        "p/q/foo": True,
        "bar/file": True,
        "x/bar/one": False,
        "bar/one/two": True,
        "a/b": True,
        "a/x/b": True,
        "a/x/y/b": True,
        "z/a/b": False,
        "xzy": True,
        "x/y": False,
        # git quirk: `**` right after an anchored pattern's literal prefix acts as leading.
        "pre/z": True,
        "prefix/q/z": True,
    }
    check(tmp_path, files, expected)


# A file below an excluded directory cannot be re-included, not even from a nested .gitignore;
# excluding the directory's contents (`dir/*`) instead does allow re-inclusion.
def test_excluded_parent_cannot_be_reincluded(tmp_path: Path) -> None:
    files = {
        ".gitignore": "cache/\n!cache/keep\nlogs/*\n!logs/keep\n",
        "cache/.gitignore": "!*\n",
    }
    expected = {
        "cache/keep": True,
        "cache/other": True,
        "cache/.gitignore": True,
        "logs/keep": False,
        "logs/other": True,
    }
    check(tmp_path, files, expected)


# Extra (info/exclude) patterns apply at the root with the lowest precedence.
def test_extra_patterns_have_lowest_precedence(tmp_path: Path) -> None:
    files = {".gitignore": "!*.bak\n", "sub/.gitignore": "!secret\n"}
    expected = {
        "a.bak": False,
        "secret": True,
        "sub/secret": False,
        "d/secret": True,
        "anchored": True,
        "d/anchored": False,
    }
    check(tmp_path, files, expected, extra=["*.bak", "secret", "/anchored", "# comment"])


# A symlinked .gitignore is not followed (git refuses to, too).
def test_symlinked_gitignore_is_not_used(tmp_path: Path) -> None:
    files = {"rules": "*.o\n"}
    expected = {"a.o": False, "rules": False}
    check(tmp_path, files, expected, symlinks={".gitignore": "rules"})


# Without a tree only the extra patterns apply.
def test_no_tree_uses_only_extra_patterns(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path), bare=True)
    rules = TreeIgnoreRules(repo, None, ["*.pyc", "!keep.pyc"])
    assert rules.is_ignored("a/b.pyc")
    assert not rules.is_ignored("keep.pyc")
    assert not rules.is_ignored("b.py")


# Only the .gitignore files of directories along the queried path are read.
def test_gitignores_are_loaded_lazily(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path), bare=True)
    files = {".gitignore": "x\n", "a/.gitignore": "y\n", "other/.gitignore": "z\n"}
    rules = TreeIgnoreRules(repo, make_tree(repo, files))
    assert rules.is_ignored("a/b/y")
    assert set(rules._cache) == {"", "a", "a/b"}


# A broad table of patterns and paths, compared path by path with `git check-ignore`.
@pytest.mark.skipif(GIT is None, reason="git CLI not available")
def test_table_matches_git_check_ignore(tmp_path: Path) -> None:
    files = {
        ".gitignore": (
            "*.o\n!main.o\n/dist\nnode_modules/\n**/tmp/**\nlib/**/gen\n"
            "*.[ch]~\nlog?.txt\n!/vendor/keep/\nvendor/*\n!vendor/keep\n"
            "docs/**/*.md\n!docs/README.md\n.env*\n!.env.example\n"
        ),
        "src/.gitignore": "/local.cfg\n!*.o\nsecret/\n",
        "src/deep/.gitignore": "*.o\n!x.o\n",
    }
    paths = [
        "a.o", "main.o", "src/a.o", "src/deep/a.o", "src/deep/x.o", "src/deep/more/main.o",
        "dist/app.js", "src/dist/app.js", "node_modules/x/index.js", "a/node_modules/y",
        "tmp/a", "x/tmp/y/z", "tmpfile", "lib/gen", "lib/a/b/gen", "lib/a/gen/file",
        "lib/x", "util.c~", "util.h~", "util.py~", "log1.txt", "log12.txt", "vendor/keep",
        "vendor/other", "docs/a.md", "docs/x/y/b.md", "docs/README.md", "docs/a.txt",
        ".env", ".env.local", ".env.example", "src/local.cfg", "local.cfg",
        "src/secret/key", "src/x/secret/key", "secret/key",
    ]  # fmt: skip
    repo = pygit2.init_repository(str(tmp_path / "repo"), bare=True)
    rules = TreeIgnoreRules(repo, make_tree(repo, files))
    ignored = git_ignored(tmp_path / "wt", files, paths, [], {})
    mismatches = {p: rules.is_ignored(p) for p in paths if rules.is_ignored(p) != (p in ignored)}
    assert mismatches == {}
    assert 10 < len(ignored) < len(paths)  # the table exercises both outcomes
