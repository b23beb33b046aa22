"""The README's promises in real-world repository setups, through the real command line.

Each case builds a repository as people have them (line-ending conversion, an
LFS-style clean/smudge filter that real git runs, sparse checkout, a linked
worktree, a submodule, skip-worktree and assume-unchanged files, FIFOs, sockets,
odd modes, symlinks, a plain folder), then plays one agent turn through
`turnback capture`, undoes it and redoes it. After the undo the disk (bytes,
permission bits, symlink targets, special files) and `git status --porcelain`
must be exactly what they were before the turn, except what the turn left out
(reported in `skipped` and `kept`, never deleted); after the redo, exactly what
the turn left. turnback itself never runs a filter: git does, in the setup.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from helpers import cli_json, git, make_repo, run_cli, write
from turnback.engine import Engine
from turnback.errors import UnsupportedRepository


def disk_state(root: Path) -> dict[str, tuple]:
    """Every entry under `root` but `.git`: kind, bytes or link target, permission bits."""
    state: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in dirnames + filenames:
            if name == ".git":
                continue
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            st = os.lstat(full)
            bits = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                state[rel] = ("link", os.readlink(full))
            elif stat.S_ISREG(st.st_mode):
                state[rel] = ("file", full.read_bytes(), oct(bits))
            elif stat.S_ISDIR(st.st_mode):
                if not any(os.scandir(full)):
                    state[rel] = ("emptydir",)
            else:
                state[rel] = ("special", stat.S_IFMT(st.st_mode), oct(bits))
    return state


def status(root: Path, plain: bool) -> list[str]:
    if plain:
        return []
    return git(root, "status", "--porcelain", "--untracked-files=all").splitlines()


def under(path: str, prefixes: list[str]) -> bool:
    return any(path == p or path.startswith(p + "/") for p in prefixes)


@dataclass
class Case:
    """A repository setup and the turn an agent plays in it."""

    build: Callable[[Path], Path]
    turn: Callable[[Path], None]
    #: Paths the turn leaves out, with the reason its "after" capture must give.
    left_out: dict[str, str] = field(default_factory=dict)
    #: Paths every capture reports (submodules), with their reason.
    always_skipped: dict[str, str] = field(default_factory=dict)
    plain: bool = False


# ---- builders ----------------------------------------------------------------------------


def _checkout_again(root: Path, *paths: str) -> None:
    """Lets git write the files as a checkout would (smudge filters, CRLF, ident)."""
    for path in paths:
        (root / path).unlink()
    git(root, "checkout", "--", *paths)
    git(root, "status", "--porcelain")  # refresh the index's stat data, as a user's git does


def build_autocrlf(tmp: Path) -> Path:
    root = make_repo(tmp / "repo", {"a.txt": "one\ntwo\n", "b.txt": "x\n"})
    git(root, "config", "core.autocrlf", "true")
    _checkout_again(root, "a.txt", "b.txt")
    assert (root / "a.txt").read_bytes() == b"one\r\ntwo\r\n"
    return root


def build_eol_crlf(tmp: Path) -> Path:
    root = make_repo(
        tmp / "repo",
        {".gitattributes": "*.txt text eol=crlf\n", "a.txt": "one\ntwo\n", "b.md": "x\n"},
    )
    _checkout_again(root, "a.txt")
    assert (root / "a.txt").read_bytes() == b"one\r\ntwo\r\n"
    return root


def build_ident(tmp: Path) -> Path:
    root = make_repo(tmp / "repo", {".gitattributes": "*.c ident\n", "a.c": "/* $Id$ */\nint x;\n"})
    _checkout_again(root, "a.c")
    assert b"$Id: " in (root / "a.c").read_bytes()
    return root


def build_utf16(tmp: Path) -> Path:
    """`working-tree-encoding`: git stores UTF-8, the disk holds UTF-16 with a BOM."""
    root = make_repo(tmp / "repo", {".gitattributes": "*.u16 text working-tree-encoding=UTF-16\n"})
    write(root, "a.u16", "héllo\n".encode("utf-16"))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "utf-16")
    assert git(root, "cat-file", "-p", "HEAD:a.u16") == "héllo\n"  # git stores UTF-8
    _checkout_again(root, "a.u16")
    assert (root / "a.u16").read_bytes().startswith((b"\xff\xfe", b"\xfe\xff"))
    return root


_POINTER_FILTER = """
import hashlib, os, sys
mode, store = sys.argv[1], sys.argv[2]
data = sys.stdin.buffer.read()
if mode == "clean":
    if data.startswith(b"version https://git-lfs"):
        sys.stdout.buffer.write(data)
    else:
        oid = hashlib.sha256(data).hexdigest()
        os.makedirs(store, exist_ok=True)
        with open(os.path.join(store, oid), "wb") as out:
            out.write(data)
        sys.stdout.buffer.write(
            b"version https://git-lfs.github.com/spec/v1\\noid sha256:%s\\nsize %d\\n"
            % (oid.encode(), len(data))
        )
else:
    oid = data.split(b"sha256:")[1].split(b"\\n")[0].decode() if b"sha256:" in data else ""
    path = os.path.join(store, oid)
    sys.stdout.buffer.write(open(path, "rb").read() if oid and os.path.exists(path) else data)
"""


def build_pointer_filter(tmp: Path) -> Path:
    """An LFS-style clean/smudge filter: git stores a pointer, the disk holds the content."""
    root = tmp / "repo"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    script = tmp / "pointer_filter.py"
    script.write_text(_POINTER_FILTER)
    store = tmp / "pointer-store"
    for mode in ("clean", "smudge"):
        git(root, "config", f"filter.lfs.{mode}", f"'{sys.executable}' '{script}' {mode} '{store}'")
    git(root, "config", "filter.lfs.required", "true")
    write(root, ".gitattributes", "*.bin filter=lfs\n")
    write(root, "model.bin", bytes(range(256)) * 64)
    write(root, "notes.md", "notes\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    _checkout_again(root, "model.bin")
    blob = git(root, "cat-file", "-p", "HEAD:model.bin")
    assert blob.startswith("version https://git-lfs")  # git stores the pointer
    return root


def build_sparse(tmp: Path) -> Path:
    root = make_repo(
        tmp / "repo", {"app/main.py": "main\n", "docs/guide.md": "guide\n", "top.txt": "top\n"}
    )
    git(root, "sparse-checkout", "set", "--cone", "app")
    assert not (root / "docs").exists()
    return root


def build_linked_worktree(tmp: Path) -> Path:
    main = make_repo(tmp / "main", {"a.txt": "a\n", "src/b.py": "b\n"})
    git(main, "worktree", "add", "-q", "-b", "feature", str(tmp / "linked"))
    return tmp / "linked"


def build_separate_git_dir(tmp: Path) -> Path:
    """`.git` is a `gitdir:` file naming a git directory beside the work tree, next to
    another project: the work tree, not the git directory's parent, is the workspace."""
    write(tmp / "other", "notes.txt", "another project\n")
    git(tmp, "init", "-q", "--separate-git-dir", str(tmp / "repo-gitdir"), "repo")
    return _committed(tmp / "repo")


def build_git_symlink(tmp: Path) -> Path:
    """`.git` is a symlink to a git directory kept elsewhere (the `repo` tool's layout)."""
    root = make_repo(tmp / "repo", {"a.txt": "a\n", "src/b.py": "b\n"})
    (root / ".git").rename(tmp / "store.git")
    (root / ".git").symlink_to(tmp / "store.git")
    return root


def _committed(root: Path) -> Path:
    write(root, "a.txt", "a\n")
    write(root, "src/b.py", "b\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def build_submodule(tmp: Path) -> Path:
    make_repo(tmp / "lib", {"lib.py": "lib\n"})
    root = make_repo(tmp / "repo", {"a.txt": "a\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(tmp / "lib"), "lib")
    git(root, "commit", "-q", "-m", "submodule")
    return root


def build_flagged(flag: str) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        root = make_repo(tmp / "repo", {"config.ini": "committed\n", "b.txt": "b\n"})
        git(root, "update-index", flag, "config.ini")
        write(root, "config.ini", "the user's local settings\n")  # never staged, never seen
        return root

    return build


def build_plain(tmp: Path) -> Path:
    root = tmp / "folder"
    write(root, "a.txt", "a\n")
    write(root, "src/b.py", "b\n")
    return root


def build_plain_attributes(tmp: Path) -> Path:
    """A plain folder whose .gitattributes asks for CRLF: turnback's shadow repository
    must not apply it."""
    root = tmp / "folder"
    write(root, ".gitattributes", "* text eol=crlf\n")
    write(root, "a.txt", "one\ntwo\n")
    return root


def build_modes(tmp: Path) -> Path:
    root = make_repo(
        tmp / "repo",
        {"secret.env": "k=1\n", "readonly.txt": "r\n", "run.sh": "#!/bin/sh\n", "x.txt": "x\n"},
    )
    (root / "secret.env").chmod(0o600)
    (root / "readonly.txt").chmod(0o444)
    (root / "run.sh").chmod(0o755)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "modes")
    return root


def build_symlinks(tmp: Path) -> Path:
    root = make_repo(tmp / "repo", {"target.txt": "t\n", "other.txt": "o\n", "d/f.txt": "f\n"})
    os.symlink("target.txt", root / "link")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "links")
    return root


# ---- turns ------------------------------------------------------------------------------


def edit(rel: str, data: bytes) -> Callable[[Path], None]:
    return lambda root: write(root, rel, data) and None


def both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def turn(root: Path) -> None:
        for step in steps:
            step(root)

    return turn


def make_fifo(rel: str) -> Callable[[Path], None]:
    return lambda root: os.mkfifo(root / rel)


def replace_with_fifo(rel: str) -> Callable[[Path], None]:
    def turn(root: Path) -> None:
        (root / rel).unlink()
        os.mkfifo(root / rel)

    return turn


def make_socket(rel: str) -> Callable[[Path], None]:
    def turn(root: Path) -> None:
        here = os.getcwd()
        os.chdir(root)  # AF_UNIX paths are limited to ~100 bytes: bind a relative one
        try:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.bind(rel)
        finally:
            os.chdir(here)

    return turn


def modes_turn(root: Path) -> None:
    write(root, "secret.env", "k=2\n")
    (root / "readonly.txt").chmod(0o644)
    write(root, "readonly.txt", "r2\n")
    (root / "readonly.txt").chmod(0o444)
    write(root, "run.sh", "#!/bin/sh\necho hi\n")


def symlinks_turn(root: Path) -> None:
    (root / "link").unlink()
    os.symlink("other.txt", root / "link")
    os.symlink("d", root / "dirlink")
    (root / "target.txt").unlink()
    os.symlink("d/f.txt", root / "target.txt")


CASES: dict[str, Case | pytest.param] = {
    "autocrlf": Case(
        build_autocrlf, both(edit("a.txt", b"one\r\ntwo\r\nthree\r\n"), edit("new.txt", b"n\r\n"))
    ),
    "eol-crlf-attribute": Case(build_eol_crlf, edit("a.txt", b"one\r\nTWO\r\n")),
    "ident": Case(build_ident, lambda root: write(root, "a.c", b"/* $Id$ */\nint y;\n") and None),
    "working-tree-encoding": Case(build_utf16, edit("a.u16", "hallo, agent\n".encode("utf-16"))),
    "pointer-filter": Case(build_pointer_filter, edit("model.bin", b"retrained weights\x00\x01")),
    "sparse-checkout": Case(
        build_sparse, both(edit("app/main.py", b"main v2\n"), edit("app/new.py", b"new\n"))
    ),
    "linked-worktree": Case(
        build_linked_worktree, both(edit("a.txt", b"a2\n"), edit("src/c.py", b"c\n"))
    ),
    "separate-git-dir": Case(
        build_separate_git_dir, both(edit("a.txt", b"a2\n"), edit("src/c.py", b"c\n"))
    ),
    "git-symlink": Case(build_git_symlink, both(edit("a.txt", b"a2\n"), edit("src/c.py", b"c\n"))),
    "submodule": Case(
        build_submodule,
        # The submodule's files are part of the workspace's turn (tests/engine/test_workspace.py).
        both(edit("a.txt", b"a2\n"), edit("lib/lib.py", b"lib edited inside the submodule\n")),
    ),
    "skip-worktree": Case(build_flagged("--skip-worktree"), edit("config.ini", b"agent's\n")),
    "assume-unchanged": Case(build_flagged("--assume-unchanged"), edit("config.ini", b"agent's\n")),
    "fifo-made": Case(
        build_plain_git := (lambda tmp: make_repo(tmp / "repo")),
        both(make_fifo("src/pipe"), edit("README.md", b"edited\n")),
        left_out={"src/pipe": "specialFile"},
    ),
    "fifo-replaces-tracked": Case(
        build_plain_git,
        both(replace_with_fifo("src/app.py"), edit("README.md", b"edited\n")),
        left_out={"src/app.py": "specialFile"},
    ),
    "socket-made": Case(
        build_plain_git,
        both(make_socket("agent.sock"), edit("README.md", b"edited\n")),
        left_out={"agent.sock": "specialFile"},
    ),
    "odd-modes": Case(build_modes, modes_turn),
    "symlinks": Case(build_symlinks, symlinks_turn),
    "plain-folder-left-out": Case(
        build_plain,
        both(
            edit("big.bin", b"\x00" * (12 << 20)),
            edit("node_modules/pkg/index.js", b"module.exports = 1\n"),
            edit("a.txt", b"a2\n"),
        ),
        left_out={"big.bin": "tooLarge", "node_modules": "excludedDirectory"},
        plain=True,
    ),
    "plain-folder-attributes": Case(
        build_plain_attributes, edit("a.txt", b"one\ntwo\nthree\n"), plain=True
    ),
}


def _case_params() -> list:
    out = []
    for name, case in CASES.items():
        if isinstance(case, Case):
            out.append(pytest.param(case, id=name))
        else:
            out.append(pytest.param(*case.values, marks=case.marks, id=name))
    return out


# Proves, per setup: a turn is captured, undone to the exact bytes, modes and git status
# it started from, and redone to exactly what it left; what it left out is reported and kept.
@pytest.mark.parametrize("case", _case_params())
def test_turn_undo_redo_restores_disk_and_status(case: Case, tmp_path: Path):
    root = case.build(tmp_path)
    before, before_status = disk_state(root), status(root, case.plain)

    opened = cli_json(root, "capture", "--label", "the turn")
    assert {s["path"]: s["reason"] for s in opened["skipped"]} == case.always_skipped
    case.turn(root)
    after, after_status = disk_state(root), status(root, case.plain)
    assert after != before, "the turn must change something"

    sealed = cli_json(root, "capture", "--phase", "after")
    reported = {s["path"]: s["reason"] for s in sealed["skipped"]}
    assert reported == {**case.always_skipped, **case.left_out}

    undone = cli_json(root, "undo")
    assert undone["turnsUndone"] == 1
    assert undone["files"], "the turn's own changes must be undone"
    kept = [k["path"] for k in undone["kept"]]
    new_left_out = [p for p in case.left_out if p not in case.always_skipped]
    assert sorted(kept) == sorted(new_left_out)
    left = list(case.left_out)
    expected = {p: v for p, v in before.items() if not under(p, left)}
    expected |= {p: v for p, v in after.items() if under(p, left)}
    assert disk_state(root) == expected
    undone_status = status(root, case.plain)
    assert [s for s in undone_status if not any(p in s for p in left)] == [
        s for s in before_status if not any(p in s for p in left)
    ]

    redone = cli_json(root, "redo")
    assert redone["turnsRedone"] == 1
    assert disk_state(root) == after
    assert status(root, case.plain) == after_status


# Proves a sparse index (which libgit2 cannot read) gets one clear line naming the fix, exit
# code 1 and nothing recorded, and that the fix it names makes capture work.
def test_sparse_index_is_refused_with_the_fix_named(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {"app/main.py": "main\n", "docs/guide.md": "guide\n"})
    git(root, "sparse-checkout", "set", "--cone", "--sparse-index", "app")
    done = run_cli(root, "capture")
    assert done.returncode == 1
    assert "sparse index" in done.stderr and "--no-sparse-index" in done.stderr
    assert "Traceback" not in done.stderr
    assert git(root, "for-each-ref", "refs/turnback") == ""
    git(root, "sparse-checkout", "init", "--no-sparse-index")
    assert cli_json(root, "capture")["turn"] == 1


# Proves a sparse index an agent turns on during a turn gets the same words from a process
# that was running already (a server, the daemon): it read the config before, and answered
# "cannot read this repository's index (unsupported mandatory extension: 'sdir')".
def test_a_sparse_index_turned_on_under_a_running_engine_is_named(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {"app/main.py": "main\n", "docs/guide.md": "guide\n"})
    engine = Engine(str(root))
    engine.capture(label="the agent's turn")
    git(root, "sparse-checkout", "set", "--cone", "--sparse-index", "app")
    with pytest.raises(UnsupportedRepository) as refused:
        engine.capture(phase="after")
    assert "--no-sparse-index" in refused.value.message
    engine.close()


# Proves a split index (libgit2 cannot read its `link` extension) gets one clear line naming
# the fix, from a first capture and from an undo of a turn captured before it was turned on,
# never "files kept changing"; and that the fix it names makes both work.
def test_split_index_is_refused_with_the_fix_named(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    cli_json(root, "capture", "--label", "before the split")
    write(root, "a.txt", "agent\n")
    cli_json(root, "capture", "--phase", "after")
    git(root, "update-index", "--split-index")
    fresh = make_repo(tmp_path / "fresh", {"a.txt": "a\n"})
    git(fresh, "update-index", "--split-index")
    for where, command in ((fresh, "capture"), (root, "capture"), (root, "undo")):
        done = run_cli(where, command)
        assert done.returncode == 1, (command, done.stderr)
        assert "split index" in done.stderr and "--no-split-index" in done.stderr, done.stderr
        assert "kept changing" not in done.stderr and "Traceback" not in done.stderr
    assert git(fresh, "for-each-ref", "refs/turnback") == ""
    for where in (fresh, root):
        git(where, "update-index", "--no-split-index")
    assert cli_json(fresh, "capture")["turn"] == 1
    assert cli_json(root, "undo")["turnsUndone"] == 1
    assert (root / "a.txt").read_text() == "a\n"


# Proves the scan threads' own handles (a repository of 5,000 tracked files or more) see the
# same work tree as the workspace where `.git` is a gitdir file or a symlink: opened by the
# git directory, libgit2 would take that directory's parent.
@pytest.mark.parametrize("build", [build_separate_git_dir, build_git_symlink])
def test_scan_handles_see_the_work_tree(build: Callable[[Path], Path], tmp_path: Path):
    from turnback.core.repository import open_workspace

    root = build(tmp_path)
    ws = open_workspace(root)
    assert Path(ws.repo.workdir).resolve() == root.resolve()
    assert Path(ws.open_again().workdir).resolve() == root.resolve()
