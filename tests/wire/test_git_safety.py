"""turnback must never disturb the user's git state, and its snapshots must survive git itself.

Every test drives the real server over stdio (pytest-lsp) against real repositories made with
the git CLI; the server runs with no git identity and a private data directory
(tests/helpers/env.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pygit2
import pytest
from pytest_lsp import LanguageClient

from helpers import (
    GIT_ENV,
    SERVER_ENV,
    capture,
    cli_json,
    git,
    git_run,
    list_turns,
    listed_packs,
    loose_objects,
    make_repo,
    read,
    redo,
    request,
    run_cli,
    start_server,
    tree_state,
    undo,
    write,
)

# ---- helpers ---------------------------------------------------------------------------------


def git_state(repo: Path) -> dict[str, object]:
    """Everything of the user's git state that turnback must leave alone (read without locks)."""
    dot = repo / ".git"
    return {
        "status": git(repo, "--no-optional-locks", "status", "--porcelain=v1", "-uall"),
        "index": (dot / "index").read_bytes(),
        "HEAD file": (dot / "HEAD").read_bytes(),
        "HEAD commit": git(repo, "rev-parse", "HEAD"),
        "refs": [
            line
            for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
            if not line.startswith("refs/turnback/")
        ],
        "stash": git(repo, "stash", "list"),
        "config": (dot / "config").read_bytes(),
    }


def all_ref_names(repo: Path) -> set[str]:
    return set(git(repo, "for-each-ref", "--format=%(refname)").split())


# ---- 1: the user's git state is left alone -------------------------------------------------


# Ensures capture/undo/redo leave status, index bytes, HEAD, refs, stash and config untouched.
async def test_user_git_state_is_untouched(client, repo: Path):
    # A stash, a staged change, an unstaged change and an untracked file: a busy repository.
    write(repo, "README.md", "stashed\n")
    git(repo, "stash", "push", "-q", "-m", "user stash")
    write(repo, "staged.txt", "staged\n")
    git(repo, "add", "staged.txt")
    write(repo, "src/app.py", "print('unstaged')\n")
    write(repo, "notes.txt", "untracked\n")
    refs_before = all_ref_names(repo)
    assert git_state(repo)["stash"], "the stash must exist for the check to mean anything"

    start = git_state(repo)
    await capture(client, label="t1")
    assert git_state(repo) == start
    write(repo, "src/app.py", "print('agent 1')\n")
    write(repo, "agent.txt", "new\n")
    after_t1 = git_state(repo)
    await capture(client, phase="after")
    assert git_state(repo) == after_t1
    await capture(client, label="t2")
    assert git_state(repo) == after_t1
    write(repo, "README.md", "agent 2\n")
    (repo / "notes.txt").unlink()
    after_t2 = git_state(repo)
    await capture(client, phase="after")
    assert git_state(repo) == after_t2

    assert (await undo(client))["turnsUndone"] == 1
    assert git_state(repo) == after_t1
    assert (await redo(client))["turnsRedone"] == 1
    assert git_state(repo) == after_t2

    added = all_ref_names(repo) - refs_before
    assert added, "captures must be anchored by refs"
    assert all(name.startswith("refs/turnback/") for name in added), added
    assert refs_before <= all_ref_names(repo)


# ---- 2: no hook ever fires -----------------------------------------------------------------

HOOKS = (
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "post-index-change",
    "fsmonitor-watchman",
)


# Ensures capture, undo and redo run no git hook at all (libgit2 writes, never the git CLI).
async def test_no_hook_fires(client, repo: Path, tmp_path: Path):
    marker = tmp_path / "hooks-fired.txt"
    hooks = repo / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in HOOKS:
        hook = hooks / name
        hook.write_text(f'#!/bin/sh\necho "{name} $*" >> "{marker}"\nexit 0\n')
        hook.chmod(0o755)

    write(repo, "src/app.py", "print('before turn')\n")
    await capture(client, label="t1")
    write(repo, "src/app.py", "print('agent')\n")
    write(repo, "new.txt", "new\n")
    await capture(client, phase="after")
    await capture(client, label="t2")
    (repo / "README.md").unlink()
    assert (await undo(client, count=2))["turnsUndone"] == 2
    assert (await redo(client, count=2))["turnsRedone"] == 2
    await list_turns(client)
    assert not marker.exists(), marker.read_text()

    # The hooks are live: a real commit fires them, so the check above can fail.
    git(repo, "commit", "-q", "--allow-empty", "-m", "hook check")
    assert "pre-commit" in marker.read_text()


# ---- 3 and 4: snapshots survive git gc -----------------------------------------------------


def gc_everything(repo: Path) -> None:
    """The most aggressive gc a user can run: reflogs expired, unreachable objects deleted.

    First the server's unpacking of its last capture's pack (ownpacks.py) is let finish:
    loose copies it wrote during the gc would be left for the next gc to prune."""
    unpacked_after = time.monotonic() + 10
    while listed_packs(repo) and time.monotonic() < unpacked_after:
        time.sleep(0.02)
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    fsck = git_run(repo, "fsck", "--no-dangling", "--no-progress")
    assert fsck.returncode == 0 and not fsck.stdout.strip(), fsck.stdout + fsck.stderr


# Ensures a snapshot's objects are reachable, so gc --prune=now loses nothing undo needs.
async def test_snapshot_survives_gc(client, repo: Path):
    # Content that exists nowhere but in the snapshot: an unstaged edit and an untracked file.
    write(repo, "src/app.py", "print('only in the snapshot')\n")
    write(repo, "scratch/idea.txt", "an untracked idea\n")
    before = tree_state(repo)
    await capture(client, label="t1")
    write(repo, "src/app.py", "print('agent')\n")
    (repo / "scratch" / "idea.txt").unlink()
    write(repo, "agent.txt", "agent file\n")

    gc_everything(repo)
    assert not loose_objects(repo), "gc must have packed or pruned every object"
    result = await undo(client)
    assert result["turnsUndone"] == 1
    assert tree_state(repo) == before
    gc_everything(repo)


# Ensures a long-lived server's caches stay valid across a gc between captures.
async def test_long_lived_server_survives_gc_between_captures(client, repo: Path):
    states = [tree_state(repo)]
    await capture(client, label="t1")
    write(repo, "src/app.py", "print('turn 1')\n")
    write(repo, "docs/one.md", "one\n")
    states.append(tree_state(repo))
    await capture(client, label="t2")

    gc_everything(repo)
    write(repo, "docs/one.md", "one, edited\n")
    write(repo, "docs/two.md", "two\n")
    (repo / "README.md").unlink()
    states.append(tree_state(repo))
    await capture(client, label="t3")
    write(repo, "src/app.py", "print('turn 3')\n")
    write(repo, "docs/three.md", "three\n")
    states.append(tree_state(repo))

    for expected in reversed(states[:-1]):
        assert (await undo(client))["turnsUndone"] == 1
        assert tree_state(repo) == expected
    for expected in states[1:]:
        assert (await redo(client))["turnsRedone"] == 1
        assert tree_state(repo) == expected
    gc_everything(repo)


async def _unanchor_by_diff(client: LanguageClient) -> None:
    await request(client, "snapshot/diff", {})


async def _unanchor_by_dry_run(client: LanguageClient) -> None:
    assert (await undo(client, dryRun=True))["dryRun"] is True


async def _unanchor_by_prune(client: LanguageClient) -> None:
    await capture(client, label="doomed")
    assert (await request(client, "snapshot/prune", {"keep": 0}))["removedSessions"]


# Ensures work-tree content hashed but not kept by any turn (by a diff, a dry run or a prune)
# cannot poison later captures once gc deletes it: captures keep working and undo restores.
@pytest.mark.parametrize(
    "unanchor",
    [_unanchor_by_diff, _unanchor_by_dry_run, _unanchor_by_prune],
    ids=["diff", "dryRun", "prune"],
)
async def test_gc_after_unanchored_hashing(client, repo: Path, unanchor):
    await capture(client, label="t1")
    write(repo, "src/app.py", "print('hashed, then unanchored')\n")
    write(repo, "docs/extra.md", "hashed, then unanchored\n")
    await unanchor(client)
    gc_everything(repo)
    expected = tree_state(repo)
    await capture(client, label="t2")
    write(repo, "src/app.py", "print('agent')\n")
    (repo / "docs" / "extra.md").unlink()
    assert (await undo(client))["turnsUndone"] == 1
    assert tree_state(repo) == expected
    gc_everything(repo)


# ---- 5: unborn HEAD, no identity -------------------------------------------------------------


# Ensures a repository with no commits (and no git identity) can be captured, undone and redone.
async def test_unborn_head_without_identity(tmp_path: Path):
    root = tmp_path / "fresh"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "staged.txt", "staged\n")
    git(root, "add", "staged.txt")
    write(root, "untracked.txt", "untracked\n")
    start = tree_state(root)
    index_bytes = (root / ".git" / "index").read_bytes()

    async with start_server(root) as client:
        turn = await capture(client, label="t1")
        assert turn["turn"] == 1 and turn["state"] == "active"
        write(root, "staged.txt", "agent\n")
        write(root, "agent.txt", "agent\n")
        (root / "untracked.txt").unlink()
        edited = tree_state(root)
        assert (await undo(client))["turnsUndone"] == 1
        assert tree_state(root) == start
        assert (await redo(client))["turnsRedone"] == 1
        assert tree_state(root) == edited

    assert git(root, "rev-parse", "--verify", "-q", "HEAD", check=False) == ""
    assert git(root, "for-each-ref", "--format=%(refname)", "refs/heads") == ""
    assert (root / ".git" / "index").read_bytes() == index_bytes


# ---- 6: a plain folder ----------------------------------------------------------------------


def dot_git_entries(root: Path) -> list[str]:
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        found += [str(Path(dirpath, n)) for n in dirnames + filenames if n == ".git"]
    return found


# Ensures a folder without git works, honours .gitignore, and never gets a `.git` of its own.
async def test_plain_folder(tmp_path: Path):
    root = tmp_path / "plain"
    write(root, ".gitignore", "*.log\nsecret/\n")
    write(root, "main.py", "print('v1')\n")
    write(root, "pkg/util.py", "X = 1\n")
    write(root, "debug.log", "log v1\n")
    write(root, "secret/key.txt", "key v1\n")
    assert pygit2.discover_repository(str(root)) is None, "the test folder must not be in a repo"

    async with start_server(root) as client:
        turn = await capture(client, label="t1")
        assert turn["skipped"] == []  # ignored files are left out silently
        assert dot_git_entries(root) == []
        write(root, "main.py", "print('agent')\n")
        write(root, "pkg/new.py", "NEW = 1\n")
        (root / "pkg" / "util.py").unlink()
        write(root, "debug.log", "log v2\n")
        write(root, "secret/key.txt", "key v2\n")
        write(root, "fresh.log", "a new ignored file\n")
        edited = tree_state(root)

        assert (await undo(client))["turnsUndone"] == 1
        assert read(root, "main.py") == "print('v1')\n"
        assert read(root, "pkg/util.py") == "X = 1\n"
        assert not (root / "pkg" / "new.py").exists()
        # Ignored files were never snapshotted: undo leaves them exactly as they are.
        assert read(root, "debug.log") == "log v2\n"
        assert read(root, "secret/key.txt") == "key v2\n"
        assert read(root, "fresh.log") == "a new ignored file\n"
        assert dot_git_entries(root) == []

        assert (await redo(client))["turnsRedone"] == 1
        assert tree_state(root) == edited
        assert dot_git_entries(root) == []
    assert dot_git_entries(root) == []


# ---- 7: linked worktrees --------------------------------------------------------------------


# Ensures a linked worktree has its own timeline and its undo touches only its own files.
async def test_linked_worktree_is_isolated(client, repo: Path, tmp_path: Path):
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", str(wt), "-b", "feature")
    wt_uri = wt.as_uri()

    await capture(client, workspace=wt_uri, label="wt-1")
    await capture(client, label="main-1")
    await capture(client, label="main-2")
    write(wt, "src/app.py", "print('wt agent')\n")
    write(wt, "wt-only.txt", "wt\n")
    write(repo, "src/app.py", "print('main agent')\n")
    main_files = tree_state(repo)

    wt_list = await list_turns(client, workspace=wt_uri)
    main_list = await list_turns(client)
    assert [t["label"] for t in wt_list["turns"]] == ["wt-1"]
    assert [t["label"] for t in main_list["turns"]] == ["main-2", "main-1"]
    assert [s["turns"] for s in wt_list["sessions"]] == [1]
    assert [s["turns"] for s in main_list["sessions"]] == [2]

    result = await undo(client, workspace=wt_uri)
    assert result["turnsUndone"] == 1
    assert read(wt, "src/app.py") == "print('v1')\n"
    assert not (wt / "wt-only.txt").exists()
    assert tree_state(repo) == main_files
    after = await list_turns(client)
    assert [t["state"] for t in after["turns"]] == ["active", "active"]
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feature"
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"


# ---- 8: racy stat data -----------------------------------------------------------------------


# Ensures a same-size rewrite that keeps the old mtime is still seen (no stale stat cache hit).
async def test_racy_rewrite_with_same_size_and_mtime_is_seen(client, repo: Path):
    original = "print('v2')\n"
    rewritten = "print('v3')\n"
    assert len(original) == len(rewritten)
    while time.time() % 1 > 0.2:  # start early in a second, so all of it fits in that second
        time.sleep(0.02)
    write(repo, "src/app.py", original)
    write(repo, "fresh.txt", "aaaa\n")
    before = os.stat(repo / "src" / "app.py")
    fresh = os.stat(repo / "fresh.txt")
    await capture(client, label="t1")
    write(repo, "src/app.py", rewritten)
    write(repo, "fresh.txt", "bbbb\n")
    os.utime(repo / "src" / "app.py", ns=(before.st_atime_ns, before.st_mtime_ns))
    os.utime(repo / "fresh.txt", ns=(fresh.st_atime_ns, fresh.st_mtime_ns))
    assert int(time.time()) == int(before.st_mtime), "the rewrite must fall in the same second"
    assert os.stat(repo / "src" / "app.py").st_mtime_ns == before.st_mtime_ns

    await capture(client, phase="after")
    assert (await undo(client))["turnsUndone"] == 1
    assert read(repo, "src/app.py") == original
    assert read(repo, "fresh.txt") == "aaaa\n"
    assert (await redo(client))["turnsRedone"] == 1
    assert read(repo, "src/app.py") == rewritten
    assert read(repo, "fresh.txt") == "bbbb\n"


# ---- 9: skipped paths -------------------------------------------------------------------------


# Ensures every left-out kind is reported with its reason, and tracked files in `build` are kept.
async def test_skipped_reasons_and_tracked_build_dir(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {"README.md": "hello\n", "build/keep.txt": "committed\n"})
    write(root, "big.bin", b"x" * 2048)
    write(root, "small.txt", "small\n")
    for n in range(6):
        write(root, f"many/f{n}.txt", f"{n}\n")
    write(root, "node_modules/pkg/index.js", "module.exports = 1\n")
    nested = make_repo(root / "nested", {"inner.txt": "inner\n"})
    assert (nested / ".git").is_dir()
    write(root, "build/keep.txt", "edited before the turn\n")

    async with start_server(root, untrackedFileSizeLimit=1024, untrackedDirFileLimit=5) as client:
        turn = await capture(client, label="t1")
        reasons = {item["path"]: item["reason"] for item in turn["skipped"]}
        assert reasons == {
            "big.bin": "tooLarge",
            "many": "tooManyFiles",
            "node_modules": "excludedDirectory",
        }
        # A nested repository is part of the workspace's turns (tests/engine/test_workspace.py).
        assert [r["path"] for r in turn["repositories"]] == ["nested"]
        listed = (await list_turns(client))["turns"][0]["skipped"]
        assert listed == turn["skipped"]

        write(root, "build/keep.txt", "agent\n")
        write(root, "small.txt", "agent\n")
        assert (await undo(client))["turnsUndone"] == 1
        assert read(root, "build/keep.txt") == "edited before the turn\n"
        assert read(root, "small.txt") == "small\n"
        # Skipped paths are left alone by undo.
        assert (root / "big.bin").read_bytes() == b"x" * 2048
        assert read(root, "nested/inner.txt") == "inner\n"


# Ensures history rewritten under turnback's refs (filter-branch --all: the timeline's
# commits rewritten, the snapshots its record names pruned) is a clear refusal naming the
# way out, not an internal error, and that `prune --keep 0` then lets captures start afresh.
def test_history_rewritten_under_turnback_refs(repo: Path):
    cli_json(repo, "capture", "--label", "t1")
    write(repo, "src/app.py", "print('agent')\n")
    cli_json(repo, "capture", "--phase", "after")
    git(repo, "commit", "-qam", "the agent's edit")  # filter-branch wants a clean tree
    subprocess.run(
        ["git", "filter-branch", "-f", "--index-filter"]
        + ["git rm -q --cached --ignore-unmatch README.md", "--", "--all"],
        cwd=repo,
        env={**GIT_ENV, "FILTER_BRANCH_SQUELCH_WARNING": "1"},
        capture_output=True,
        check=True,
    )
    shutil.rmtree(repo / ".git" / "refs" / "original")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    for command in ("diff", "undo", "capture"):
        done = run_cli(repo, command)
        assert done.returncode == 1, (command, done.stderr)
        assert "is missing object" in done.stderr and "prune --keep 0" in done.stderr
    assert cli_json(repo, "prune", "--keep", "0")["removedTurns"]
    assert cli_json(repo, "capture", "--label", "afresh")["turn"] == 1
    git(repo, "fsck", "--strict")


# Ensures a linked worktree made with the name of a removed one starts with no turns: the
# removed one's timeline is set aside under refs/turnback/retired/ (nothing lost), where an
# undo in the new worktree used to delete a file it had never made.
def test_worktree_reusing_a_removed_ones_name_starts_afresh(repo: Path, tmp_path: Path):
    linked = tmp_path / "feat"
    git(repo, "worktree", "add", "-q", "-b", "feat", str(linked))
    cli_json(linked, "capture", "--label", "agent: add app2.py")
    write(linked, "app2.py", "print('app')\n")
    cli_json(linked, "capture", "--phase", "after")
    git(linked, "add", "app2.py")
    git(linked, "commit", "-qm", "app2")
    git(repo, "worktree", "remove", str(linked))
    git(repo, "worktree", "add", "-q", "-b", "other", str(linked), "feat")
    assert cli_json(linked, "list")["turns"] == []
    done = run_cli(linked, "undo")
    assert done.returncode == 0 and "Nothing to undo" in done.stdout
    assert (linked / "app2.py").read_text() == "print('app')\n"
    retired = git(repo, "for-each-ref", "--format=%(refname)", "refs/turnback/retired/")
    assert "/sessions/default" in retired
    cli_json(linked, "capture", "--label", "new")
    assert [t["label"] for t in cli_json(linked, "list")["turns"]] == ["new"]


def _one_turn(root: Path, name: str, label: str = "") -> None:
    cli_json(root, "capture", "--label", label or f"agent in {root.name}")
    write(root, name, "the agent's\n")
    cli_json(root, "capture", "--phase", "after")


# Ensures a work tree made by git's contrib `git-new-workdir` (its .git a folder whose refs
# and objects are symlinks into another's) has a timeline of its own: both wrote
# refs/turnback/main, so an undo in one took back the other's newest turn.
def test_new_workdir_work_trees_keep_their_own_turns(repo: Path, tmp_path: Path):
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    for shared in ("config", "refs", "objects", "info", "hooks", "packed-refs"):
        if (repo / ".git" / shared).exists():
            (other / ".git" / shared).symlink_to(repo / ".git" / shared)
    shutil.copy(repo / ".git" / "HEAD", other / ".git" / "HEAD")
    git(other, "checkout", "-q", "-f")
    _one_turn(repo, "in_main.txt")
    _one_turn(other, "in_other.txt")
    assert [t["label"] for t in cli_json(repo, "list")["turns"]] == ["agent in repo"]
    assert [f["path"] for f in cli_json(repo, "undo")["files"]] == ["in_main.txt"]
    assert read(other, "in_other.txt") == "the agent's\n"
    assert [f["path"] for f in cli_json(other, "undo")["files"]] == ["in_other.txt"]


# Ensures linked worktrees whose names no ref may hold (not UTF-8, a space, `.lock`) get
# turns like any other: every command was an internal error or "files kept changing".
@pytest.mark.parametrize("name", [b"wt-\xff", b"my feature", b"old.lock"])
def test_worktree_names_no_ref_may_hold(repo: Path, tmp_path: Path, name: bytes):
    linked = Path(os.fsdecode(bytes(tmp_path) + b"/" + name))
    git(repo, "worktree", "add", "-q", "-b", "feat", str(linked))
    git_name = next((repo / ".git" / "worktrees").iterdir()).name
    if git_name != linked.name:  # git names the git directory after the folder
        (repo / ".git" / "worktrees" / git_name).rename(repo / ".git" / "worktrees" / linked.name)
        (linked / ".git").write_bytes(
            b"gitdir: " + os.fsencode(repo / ".git" / "worktrees" / linked.name) + b"\n"
        )
        (repo / ".git" / "worktrees" / linked.name / "gitdir").write_bytes(
            os.fsencode(linked / ".git") + b"\n"
        )
    _one_turn(linked, "new.txt", label="agent")
    assert [f["path"] for f in cli_json(linked, "undo")["files"]] == ["new.txt"]
    assert cli_json(repo, "list")["turns"] == []  # the main work tree's timeline is its own


# Ensures a folder whose `.git` file names a git directory that was moved is refused, as
# git refuses it: it silently became a plain folder with a second, empty timeline.
def test_dangling_or_malformed_git_file_is_refused(repo: Path, tmp_path: Path):
    linked = tmp_path / "separate"
    git(repo, "worktree", "add", "-q", "-b", "feat", str(linked))
    (linked / ".git").write_text("gitdir: /nowhere/at/all\n")
    done = run_cli(linked, "list")
    assert done.returncode == 1 and "cannot be opened" in done.stderr, done.stderr
    (linked / ".git").write_text("gitdir:\n")
    done = run_cli(linked, "capture")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "malformed" in done.stderr


# Ensures turnback finds the repository git finds: with GIT_CEILING_DIRECTORIES fencing off a
# dotfiles repository at the home folder, a project below it is a plain folder. turnback
# took the whole home folder for the project's work tree: its turns held and its undo
# rewrote files outside the project, and it wrote refs into the dotfiles repository.
def test_ceiling_directories_fence_off_a_repository_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    home = make_repo(tmp_path / "home", {".bashrc": "rc\n", "notes.txt": "v1\n"})
    project = home / "project"
    write(project, "app.py", "v1\n")
    env = {**SERVER_ENV, "GIT_CEILING_DIRECTORIES": str(home)}

    def turnback(*args: str) -> None:
        done = run_cli(project, *args, env=env)
        assert done.returncode == 0, done.stderr

    turnback("capture", "--label", "turn")
    write(project, "app.py", "the agent's\n")
    turnback("capture", "--phase", "after")
    write(home, "notes.txt", "v2, the user's, outside the project\n")
    turnback("undo")
    assert read(project, "app.py") == "v1\n"
    assert read(home, "notes.txt") == "v2, the user's, outside the project\n"
    assert git(home, "for-each-ref", "refs/turnback") == ""
    assert not (home / ".git" / "turnback").exists()
    # The hooks' notes and the daemon's location are found the same way (without pygit2).
    from turnback.daemon.paths import locate
    from turnback.hooks.hookstate import git_dir

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(home))
    assert git_dir(str(project)) is None
    assert locate(str(project)).root == str(project.resolve())


# Ensures the global configuration git reads from GIT_CONFIG_GLOBAL (libgit2 reads only
# ~/.gitconfig) is turnback's too: with `core.excludesFile` set there, the files git ignores
# were captured, listed in the turn's diff, and the build output the agent made was deleted
# by the undo, where ignored files are never touched.
def test_the_global_config_git_config_global_names_is_read(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    (tmp_path / "ignore").write_text("*.log\n")
    (tmp_path / "gitconfig").write_text(f"[core]\n\texcludesFile = {tmp_path / 'ignore'}\n")
    env = {**SERVER_ENV, "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig")}

    def turnback(*args: str) -> dict:
        done = run_cli(repo, *args, "--json", env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    turnback("capture", "--label", "turn")
    write(repo, "build.log", "the build's output\n")
    write(repo, "README.md", "the agent's\n")
    turnback("capture", "--phase", "after")
    assert [f["path"] for f in turnback("diff")["files"]] == ["README.md"]
    turnback("undo")
    assert read(repo, "README.md") == "hello\n"
    assert read(repo, "build.log") == "the build's output\n"


# Ensures names are compared as the disk compares them, whatever core.ignorecase says: a
# repository copied from macOS to Linux keeps `true`, and libgit2 then matched the user's
# untracked Makefile to the tracked makefile, so the Makefile was in no snapshot and the
# agent's overwrite of it could not be undone. The user's config is not changed.
def test_ignorecase_true_on_a_case_sensitive_disk(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"makefile": "tracked\n"})
    git(repo, "config", "core.ignorecase", "true")
    config = (repo / ".git" / "config").read_bytes()
    write(repo, "Makefile", "the user's own notes\n")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "Makefile", "the agent's\n")
    cli_json(repo, "capture", "--phase", "after")
    cli_json(repo, "undo")
    assert read(repo, "Makefile") == "the user's own notes\n"
    assert read(repo, "makefile") == "tracked\n"
    assert (repo / ".git" / "config").read_bytes() == config


# Ensures exec bits are snapshotted as the disk has them where the config says
# `core.filemode = false` (a setting many users make globally): the agent's `chmod -x` was
# no change to libgit2, so the undo left it, and a deleted script came back without its
# exec bit. The user's config is not changed.
def test_exec_bits_kept_with_filemode_false(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"run.sh": "echo run\n", "build.sh": "echo build\n"})
    git(repo, "config", "core.filemode", "false")
    for script in ("run.sh", "build.sh"):
        os.chmod(repo / script, 0o755)  # the index still says 644: git ignores the bit
    cli_json(repo, "capture", "--label", "turn")
    os.chmod(repo / "run.sh", 0o644)
    os.remove(repo / "build.sh")
    cli_json(repo, "capture", "--phase", "after")
    cli_json(repo, "undo")
    assert os.stat(repo / "run.sh").st_mode & 0o111 and os.stat(repo / "build.sh").st_mode & 0o111
    assert git(repo, "config", "core.filemode").strip() == "false"


# Ensures a same-size edit that kept its mtime (`cp -p` from a backup, `rsync -a`, `tar x`)
# is captured whatever the repository's config says of stat data: with `core.trustctime =
# false` (git's advice where backup tools touch ctimes) it was invisible to turnback's scan,
# so undoing the agent's next turn put an older version over the user's, which no snapshot
# held; `core.ignoreStat = true` makes libgit2 take every file as unchanged.
# A plain folder's shadow reads them from the user's global config.
@pytest.mark.parametrize("key, value", [("core.trustctime", "false"), ("core.ignorestat", "true")])
@pytest.mark.parametrize("where", ["repository", "plain folder"])
def test_stat_settings_never_hide_an_edit(tmp_path: Path, key: str, value: str, where: str):
    section, name = key.split(".")
    global_config = write(tmp_path, "gitconfig", f"[{section}]\n\t{name} = {value}\n")
    env = {**SERVER_ENV, "GIT_CONFIG_GLOBAL": str(global_config)}
    if where == "repository":
        work = make_repo(tmp_path / "work", {"a.txt": "version 1 of the config\n"})
        git(work, "config", key, value)
    else:
        work = tmp_path / "work"
        write(work, "a.txt", "version 1 of the config\n")

    def cli(*args: str) -> None:
        done = run_cli(work, *args, env=env)
        assert done.returncode == 0, done.stderr

    cli("capture", "--label", "turn 1")
    cli("capture", "--phase", "after")
    time.sleep(1.1)  # past any racy window: the user's edit below keeps size and mtime
    backup = write(tmp_path, "backup.txt", "the user's own edit!!!!\n")
    st = os.stat(work / "a.txt")
    os.utime(backup, ns=(st.st_atime_ns, st.st_mtime_ns))
    shutil.copy2(backup, work / "a.txt")  # as `cp -p` restores it
    cli("capture", "--label", "turn 2")
    write(work, "a.txt", "the agent rewrote it\n")
    cli("capture", "--phase", "after")
    cli("undo")
    assert read(work, "a.txt") == "the user's own edit!!!!\n"


# Ensures a committed symlink that `core.symlinks = false` checked out as a plain file (a
# clone made on Windows) is snapshotted as the plain file it is: the undo of an agent's edit
# turned the user's file into a real symlink.
def test_a_link_checked_out_as_a_file_stays_a_file(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    os.symlink("README.md", repo / "link")
    git(repo, "add", "link")
    git(repo, "commit", "-q", "-m", "a link")
    git(repo, "config", "core.symlinks", "false")
    os.remove(repo / "link")
    git(repo, "checkout", "--", "link")  # as git checks it out there: a file holding its target
    assert not (repo / "link").is_symlink() and read(repo, "link") == "README.md"
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "link", "the agent's\n")
    cli_json(repo, "capture", "--phase", "after")
    cli_json(repo, "undo")
    assert not (repo / "link").is_symlink() and read(repo, "link") == "README.md"


# Ensures `core.logAllRefUpdates=always` (the user's config) gives turnback's refs no
# reflog: one entry per capture kept every pruned turn's objects, a secret file the agent
# wrote among them, through `git gc --prune=now` until reflogs expire.
def test_pruned_turns_leave_nothing_behind_with_reflogs_always(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "core.logAllRefUpdates", "always")
    for turn in (1, 2, 3):
        cli_json(repo, "capture", "--label", f"t{turn}")
        write(repo, "secret.env", f"TOKEN=secret-of-turn-{turn}\n")
        cli_json(repo, "capture", "--phase", "after")
    logs = repo / ".git" / "logs" / "refs" / "turnback"
    assert not [p for p in logs.rglob("*") if p.is_file()]
    cli_json(repo, "prune", "--keep", "1")
    git(repo, "gc", "-q", "--prune=now")
    first = str(pygit2.hash(b"TOKEN=secret-of-turn-1\n"))
    assert git_run(repo, "cat-file", "-e", first).returncode != 0


# Ensures `GIT_OBJECT_DIRECTORY`, which git reads and libgit2 does not, is a clear refusal:
# every capture failed "missing object", advising `turnback prune --keep 0`.
def test_an_object_directory_set_in_the_environment_is_refused(tmp_path: Path):
    store = tmp_path / "store"
    store.mkdir()
    env = {**GIT_ENV, "GIT_OBJECT_DIRECTORY": str(store)}
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")  # then its objects go elsewhere
    write(repo, "a.txt", "a\n")
    for args in (["add", "a.txt"], ["commit", "-q", "-m", "a"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    done = run_cli(repo, "capture", "--label", "turn", env={**SERVER_ENV, **env})
    assert done.returncode != 0
    assert "GIT_OBJECT_DIRECTORY is set" in done.stderr and "prune" not in done.stderr
