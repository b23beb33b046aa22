"""Undo and redo over LSP against real git repositories: what changes on disk, and what not.

Every test drives the real server process through `snapshot/*` requests and then checks
the work tree itself: file bytes, symlink targets, exec bits, `git status`, the index.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from helpers import (
    SERVER_CONFIG,
    capture,
    edit_unsaved,
    git,
    list_turns,
    make_repo,
    open_document,
    open_session,
    read,
    redo,
    request,
    start_server,
    to_plain,
    tree_state,
    undo,
    write,
)
from turnback.engine import Engine, RestoreOptions

REQUEST_FAILED = -32803
SIZE_LIMIT = 1000


# ---- helpers -----------------------------------------------------------------------------


async def expect_conflict(client: LanguageClient, method: str, params: dict | None = None):
    """Runs a request that must fail with a conflict; returns the error's data."""
    with pytest.raises(JsonRpcException) as caught:
        await request(client, method, params)
    assert caught.value.code == REQUEST_FAILED, caught.value
    data = to_plain(caught.value.data)
    assert data["reason"] == "conflict", data
    return data


def status(root: Path) -> str:
    return git(root, "status", "--porcelain")


def actions(result: dict) -> dict[str, str]:
    return {f["path"]: f["action"] for f in result["files"]}


def is_exec(path: Path) -> bool:
    return bool(os.stat(path).st_mode & stat.S_IXUSR)


@pytest_lsp.fixture(config=SERVER_CONFIG)
async def small_limit_client(lsp_client: LanguageClient, repo: Path):
    """Like conftest's `client`, with untrackedFileSizeLimit set to SIZE_LIMIT bytes."""
    await open_session(lsp_client, repo, untrackedFileSizeLimit=SIZE_LIMIT)
    yield lsp_client
    await lsp_client.shutdown_session()


# ---- tests -------------------------------------------------------------------------------


# Ensures undo deletes a file the turn created, and reports it as deleted.
async def test_undo_removes_created_file(client, repo: Path):
    await capture(client)
    write(repo, "new.txt", "agent file\n")
    result = await undo(client)
    assert result["turnsUndone"] == 1
    assert actions(result) == {"new.txt": "deleted"}
    assert not (repo / "new.txt").exists()
    assert status(repo) == ""


# Ensures undo restores a tracked file's edit and leaves `git status` clean.
async def test_undo_restores_tracked_edit(client, repo: Path):
    await capture(client)
    write(repo, "README.md", "agent was here\n")
    result = await undo(client)
    assert actions(result) == {"README.md": "modified"}
    assert (repo / "README.md").read_bytes() == b"hello\n"
    assert status(repo) == ""


# Ensures undo restores the content an untracked file had when the turn began.
async def test_undo_restores_untracked_edit(client, repo: Path):
    write(repo, "notes.txt", "my notes v1\n")
    await capture(client)
    write(repo, "notes.txt", "agent rewrote the notes\n")
    await undo(client)
    assert (repo / "notes.txt").read_bytes() == b"my notes v1\n"
    assert status(repo) == "?? notes.txt\n"


# Ensures one undo reverts only the newest of two turns.
async def test_undo_reverts_only_latest_turn(client, repo: Path):
    await capture(client, label="t1")
    write(repo, "a.txt", "from turn 1\n")
    write(repo, "README.md", "turn 1 readme\n")
    await capture(client, label="t2")
    write(repo, "a.txt", "from turn 2\n")
    write(repo, "src/app.py", "print('t2')\n")
    result = await undo(client)
    assert result["turnsUndone"] == 1
    assert [t["label"] for t in result["turns"]] == ["t2"]
    assert read(repo, "a.txt") == "from turn 1\n"
    assert read(repo, "README.md") == "turn 1 readme\n"
    assert read(repo, "src/app.py") == "print('v1')\n"
    listing = await list_turns(client)
    assert [(t["label"], t["state"]) for t in listing["turns"]] == [
        ("t2", "undone"),
        ("t1", "active"),
    ]


# Ensures files the user changed before the turn, and the turn did not touch, are left alone.
async def test_undo_leaves_unrelated_files_alone(client, repo: Path):
    write(repo, "src/app.py", "print('user, uncommitted')\n")
    write(repo, "scratch.txt", "user scratch\n")
    write(repo, "debug.log", "ignored log\n")
    write(repo, "ignored/cache.bin", b"\x00cache\xff")
    before = tree_state(repo)
    before_status = status(repo)
    await capture(client)
    write(repo, "README.md", "agent\n")
    result = await undo(client)
    assert actions(result) == {"README.md": "modified"}
    assert tree_state(repo) == before
    assert status(repo) == before_status == " M src/app.py\n?? scratch.txt\n"


# Ensures repeated undos walk back turn by turn and then report "Nothing to undo".
async def test_sequential_undos_until_nothing(client, repo: Path):
    await capture(client)
    write(repo, "README.md", "one\n")
    await capture(client)
    write(repo, "README.md", "two\n")
    assert (await undo(client))["turnsUndone"] == 1
    assert read(repo, "README.md") == "one\n"
    assert (await undo(client))["turnsUndone"] == 1
    assert read(repo, "README.md") == "hello\n"
    result = await undo(client)
    assert result["turnsUndone"] == 0
    assert result["message"] == "Nothing to undo"
    assert result["files"] == []
    assert read(repo, "README.md") == "hello\n"


# Ensures renames made during the turn (git mv, and os.rename of a dir and a file) are reversed.
async def test_undo_reverses_renames(client, repo: Path):
    write(repo, "notes.txt", "untracked notes\n")
    pre = tree_state(repo)
    await capture(client)
    (repo / "docs").mkdir()
    git(repo, "mv", "README.md", "docs/README.md")
    os.rename(repo / "src", repo / "lib")
    os.rename(repo / "notes.txt", repo / "notes-renamed.txt")
    await undo(client)
    assert read(repo, "README.md") == "hello\n"
    assert read(repo, "src/app.py") == "print('v1')\n"
    assert read(repo, "notes.txt") == "untracked notes\n"
    for gone in ("docs", "lib", "notes-renamed.txt"):
        assert not os.path.lexists(repo / gone)
    assert tree_state(repo) == pre


# Ensures files the turn created in ignored places survive undo (they were never saved).
async def test_files_created_in_ignored_dir_survive(client, repo: Path):
    await capture(client)
    write(repo, "ignored/new/deep.bin", b"\x00\x01built")
    write(repo, "build.log", "agent log\n")
    write(repo, "README.md", "agent\n")
    await undo(client)
    assert (repo / "ignored/new/deep.bin").read_bytes() == b"\x00\x01built"
    assert read(repo, "build.log") == "agent log\n"
    assert read(repo, "README.md") == "hello\n"
    assert status(repo) == ""


# Ensures undoing a .gitignore edit restores it without deleting a file it had un-ignored.
async def test_gitignore_edit_keeps_formerly_ignored_file(client, repo: Path):
    write(repo, "secret.log", "precious, ignored\n")
    await capture(client)
    write(repo, ".gitignore", "ignored/\n")  # the turn un-ignores *.log
    assert "?? secret.log" in status(repo)
    await undo(client)
    assert read(repo, ".gitignore") == "ignored/\n*.log\n"
    assert (repo / "secret.log").read_bytes() == b"precious, ignored\n"
    assert status(repo) == ""


# Ensures a file ignored by .git/info/exclude when the turn began survives its undo after
# the rule is removed (no snapshot holds info/exclude: each names the rules it saw).
async def test_info_exclude_edit_keeps_formerly_ignored_file(client, repo: Path):
    exclude = repo / ".git" / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("# comment\nsecret.env\n")
    write(repo, "secret.env", "TOKEN=user's\n")
    await capture(client, phase="before")
    exclude.write_text("# comment\n")  # the rule is removed during the turn
    write(repo, "README.md", "agent\n")
    await capture(client, phase="after")
    undone = await undo(client)
    assert read(repo, "secret.env") == "TOKEN=user's\n"
    assert {"path": "secret.env", "reason": "ignored"} in undone["kept"]
    assert read(repo, "README.md") == "hello\n"


# Ensures the same holds in a nested repository, by its own info/exclude; and that a file
# the agent made there, which only the outer .gitignore matches, is still undone when the
# outer rules change (the outer .gitignore never judges the nested repository's files).
async def test_nested_repository_judged_by_its_own_rules(client, repo: Path):
    write(repo, ".gitignore", "ignored/\n*.log\n")
    nested = make_repo(repo / "sub", {"s.txt": "s\n"})
    (nested / ".git/info").mkdir(exist_ok=True)
    (nested / ".git/info/exclude").write_text("secret.txt\n")
    write(repo, "sub/secret.txt", "nested secret\n")
    await capture(client, phase="before")
    (nested / ".git/info/exclude").write_text("")  # the turn removes the nested rule
    (repo / ".git/info").mkdir(exist_ok=True)
    (repo / ".git/info/exclude").write_text("tmp/\n")  # and adds an unrelated outer one
    write(repo, "sub/debug.log", "the agent's\n")
    await capture(client, phase="after")
    undone = await undo(client)
    assert read(repo, "sub/secret.txt") == "nested secret\n"
    assert {"path": "sub/secret.txt", "reason": "ignored"} in undone["kept"]
    assert not (repo / "sub/debug.log").exists()


# Ensures a manual edit after a sealed turn is a conflict, force wins, redo brings it back.
async def test_manual_edit_after_sealed_turn_conflicts(client, repo: Path):
    await capture(client, phase="before")
    write(repo, "README.md", "agent\n")
    await capture(client, phase="after")
    manual = b"user edit\r\nno final newline \xc3\xa9"
    write(repo, "README.md", manual)
    data = await expect_conflict(client, "snapshot/undo")
    assert data["files"] == ["README.md"]
    assert (repo / "README.md").read_bytes() == manual
    assert (await list_turns(client))["turns"][0]["state"] == "active"
    result = await undo(client, force=True)
    assert result["turnsUndone"] == 1
    assert (repo / "README.md").read_bytes() == b"hello\n"
    result = await redo(client)
    assert result["turnsRedone"] == 1
    assert (repo / "README.md").read_bytes() == manual


async def _user_edit_between_two_turns(client, repo: Path) -> bytes:
    """Turn 1 edits README.md and is sealed; the user edits it; turn 2 edits another file."""
    await capture(client, phase="before")
    write(repo, "README.md", "agent\n")
    await capture(client, phase="after")
    manual = b"the user's edit between the turns\n"
    write(repo, "README.md", manual)
    await capture(client, phase="before")
    write(repo, "src/app.py", "print('agent, turn 2')\n")
    await capture(client, phase="after")
    return manual


# Ensures an edit the user made between two sealed turns is a conflict for an undo of both
# at once: it was no turn's, and the next capture would have dropped the redo holding it.
async def test_edit_between_turns_undone_together_conflicts(client, repo: Path):
    manual = await _user_edit_between_two_turns(client, repo)
    data = await expect_conflict(client, "snapshot/undo", {"count": 2})
    assert data["files"] == ["README.md"]
    assert (repo / "README.md").read_bytes() == manual
    result = await undo(client, count=2, force=True)
    assert result["turnsUndone"] == 2 and read(repo, "README.md") == "hello\n"
    assert (await redo(client, count=2))["turnsRedone"] == 2
    assert (repo / "README.md").read_bytes() == manual


# Ensures the same edit stays a conflict when the turns are undone one at a time: undoing
# the later turn first once made the earlier turn's undo overwrite it without a word.
async def test_edit_between_turns_undone_one_at_a_time_conflicts(client, repo: Path):
    manual = await _user_edit_between_two_turns(client, repo)
    assert actions(await undo(client)) == {"src/app.py": "modified"}
    data = await expect_conflict(client, "snapshot/undo")
    assert data["files"] == ["README.md"]
    assert (repo / "README.md").read_bytes() == manual


# Ensures the user's edits to other files after a sealed turn survive its undo.
async def test_later_edits_to_other_files_survive_sealed_undo(client, repo: Path):
    await capture(client, phase="before")
    write(repo, "README.md", "agent\n")
    await capture(client, phase="after")
    write(repo, "src/app.py", "print('user after the turn')\n")
    write(repo, "user.txt", "user's new file\n")
    result = await undo(client)
    assert actions(result) == {"README.md": "modified"}
    assert read(repo, "README.md") == "hello\n"
    assert read(repo, "src/app.py") == "print('user after the turn')\n"
    assert read(repo, "user.txt") == "user's new file\n"


# Ensures undo leaves the user's staged changes (the index) exactly as they were.
async def test_unrelated_staged_changes_survive(client, repo: Path):
    write(repo, "src/app.py", "print('staged')\n")
    git(repo, "add", "src/app.py")
    cached = git(repo, "diff", "--cached")
    assert "staged" in cached
    index_bytes = (repo / ".git/index").read_bytes()
    await capture(client)
    write(repo, "README.md", "agent\n")
    await undo(client)
    assert (repo / ".git/index").read_bytes() == index_bytes
    assert git(repo, "diff", "--cached") == cached
    assert read(repo, "README.md") == "hello\n"
    assert read(repo, "src/app.py") == "print('staged')\n"


# Ensures redo restores the exact post-turn state, including deleted and created files.
async def test_redo_restores_exact_post_turn_state(client, repo: Path):
    write(repo, "notes.txt", "untracked\n")
    pre = tree_state(repo)
    await capture(client)
    write(repo, "README.md", b"agent\r\nline two, no newline")
    (repo / "src/app.py").unlink()
    write(repo, "made/by/agent.bin", b"\x00\xff\x00binary\n")
    write(repo, "notes.txt", "agent notes\n")
    post = tree_state(repo)
    post_status = status(repo)
    await undo(client)
    assert tree_state(repo) == pre
    result = await redo(client)
    assert result["turnsRedone"] == 1
    assert tree_state(repo) == post
    assert status(repo) == post_status


# Ensures a new "before" capture drops the redo stack.
async def test_new_capture_clears_redo(client, repo: Path):
    await capture(client)
    write(repo, "README.md", "agent\n")
    await undo(client)
    assert (await list_turns(client))["canRedo"] is True
    await capture(client)
    listing = await list_turns(client)
    assert listing["canRedo"] is False
    assert all(t["state"] == "active" for t in listing["turns"])
    result = await redo(client)
    assert result["turnsRedone"] == 0
    assert result["message"] == "Nothing to redo"
    assert read(repo, "README.md") == "hello\n"


# Ensures count undoes/redoes several turns at once and is capped at the active turns.
async def test_undo_redo_with_count(client, repo: Path):
    for n in (1, 2, 3):
        await capture(client, label=f"t{n}")
        write(repo, "counter.txt", f"{n}\n")
        write(repo, f"file{n}.txt", f"turn {n}\n")
    result = await undo(client, count=2)
    assert result["turnsUndone"] == 2
    assert [t["turn"] for t in result["turns"]] == [3, 2]
    assert read(repo, "counter.txt") == "1\n"
    assert (repo / "file1.txt").exists()
    assert not (repo / "file2.txt").exists() and not (repo / "file3.txt").exists()
    result = await redo(client, count=2)
    assert result["turnsRedone"] == 2
    assert read(repo, "counter.txt") == "3\n"
    assert read(repo, "file2.txt") == "turn 2\n" and read(repo, "file3.txt") == "turn 3\n"
    result = await undo(client, count=99)
    assert result["turnsUndone"] == 3
    for n in (1, 2, 3):
        assert not (repo / f"file{n}.txt").exists()
    assert not (repo / "counter.txt").exists()
    assert status(repo) == ""
    assert (await list_turns(client))["canUndo"] is False


# Ensures dryRun reports what undo would do while changing nothing on disk or in the timeline.
async def test_dry_run_changes_nothing(client, repo: Path):
    await capture(client)
    write(repo, "README.md", "agent\n")
    write(repo, "new.txt", "agent file\n")
    state = tree_state(repo)
    listing = await list_turns(client)
    result = await undo(client, dryRun=True)
    assert result["dryRun"] is True
    assert result["turnsUndone"] == 1
    assert actions(result) == {"README.md": "modified", "new.txt": "deleted"}
    assert tree_state(repo) == state
    assert await list_turns(client) == listing
    result = await undo(client)
    assert result["dryRun"] is False
    assert read(repo, "README.md") == "hello\n" and not (repo / "new.txt").exists()


# Ensures binary bytes, symlinks, exec bits and unusual names are restored exactly.
async def test_binary_symlink_exec_and_odd_names(client, repo: Path):
    odd = "dir with space/naïve ☃.txt"
    write(repo, "data.bin", bytes(range(256)) + b"\x00\x00end")
    write(repo, "run.sh", "#!/bin/sh\necho hi\n")
    write(repo, odd, "naïve ☃ v1\n")
    os.symlink("README.md", repo / "link")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more files")
    pre = tree_state(repo)
    await capture(client)
    write(repo, "data.bin", b"\x00\xfe\xff" * 100)
    (repo / "link").unlink()
    os.symlink("src/app.py", repo / "link")
    os.symlink("src", repo / "newlink")
    os.chmod(repo / "run.sh", 0o755)
    write(repo, odd, "naïve ☃ agent\n")
    write(repo, "dir with space/新しい file.bin", b"\x00new")
    post = tree_state(repo)
    await undo(client)
    assert (repo / "data.bin").read_bytes() == bytes(range(256)) + b"\x00\x00end"
    assert os.readlink(repo / "link") == "README.md"
    assert not os.path.lexists(repo / "newlink")
    assert not is_exec(repo / "run.sh")
    assert read(repo, odd) == "naïve ☃ v1\n"
    assert not (repo / "dir with space/新しい file.bin").exists()
    assert tree_state(repo) == pre
    assert status(repo) == ""
    await redo(client)
    assert is_exec(repo / "run.sh")
    assert tree_state(repo) == post


# Ensures a tracked directory tree the turn deleted comes back with all nested files.
async def test_deleted_directory_comes_back(client, repo: Path):
    files = {"pkg/a.py": "a\n", "pkg/sub/b.py": "b\n", "pkg/sub/deeper/c.txt": "c\n"}
    for rel, content in files.items():
        write(repo, rel, content)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pkg")
    await capture(client)
    shutil.rmtree(repo / "pkg")
    result = await undo(client)
    assert actions(result) == dict.fromkeys(files, "created")
    for rel, content in files.items():
        assert read(repo, rel) == content
    assert status(repo) == ""


# Ensures an untracked file grown past the size limit by the turn is kept and reported.
async def test_file_grown_past_size_limit_is_kept(small_limit_client, repo: Path):
    client = small_limit_client
    write(repo, "big.txt", "small\n")
    await capture(client)
    large = b"x" * (SIZE_LIMIT * 5)
    write(repo, "big.txt", large)
    write(repo, "README.md", "agent\n")
    result = await undo(client)
    assert result["kept"] == [{"path": "big.txt", "reason": "tooLarge"}]
    assert "big.txt" not in actions(result)
    assert (repo / "big.txt").read_bytes() == large
    assert read(repo, "README.md") == "hello\n"


# Ensures an undo says which deleted files no snapshot held (too large, an excluded
# folder) rather than let the user believe they came back; a redo has none to name.
async def test_undo_names_what_it_cannot_bring_back(small_limit_client, repo: Path):
    client = small_limit_client
    write(repo, "big.bin", "x" * (SIZE_LIMIT * 5))
    write(repo, "still.bin", "y" * (SIZE_LIMIT * 5))
    write(repo, "node_modules/dep/index.js", "dep\n")
    await capture(client)
    (repo / "big.bin").unlink()
    shutil.rmtree(repo / "node_modules")
    write(repo, "README.md", "agent\n")
    result = await undo(client)
    assert result["notRestored"] == [
        {"path": "big.bin", "reason": "tooLarge"},
        {"path": "node_modules", "reason": "excludedDirectory"},
    ]
    assert "Not brought back, as no snapshot held them: big.bin (tooLarge)" in result["message"]
    assert read(repo, "README.md") == "hello\n" and not (repo / "big.bin").exists()
    redone = await redo(client)
    assert "notRestored" not in redone and read(repo, "README.md") == "agent\n"


# Ensures files the turn added inside a nested repository are part of the turn (the
# workspace holds it, tests/engine/test_workspace.py): undo removes them, redo brings them back.
async def test_nested_repository_files_survive(client, repo: Path):
    nested = repo / "nested"
    nested.mkdir()
    git(nested, "init", "-q", "-b", "main")
    write(nested, "lib.py", "x = 1\n")
    git(nested, "add", "-A")
    git(nested, "commit", "-q", "-m", "nested")
    await capture(client)
    write(nested, "added.py", "y = 2\n")
    write(nested, "pkg/new.txt", "new in nested\n")
    write(repo, "README.md", "agent\n")
    await undo(client)
    assert not (nested / "added.py").exists() and not (nested / "pkg").exists()
    assert read(nested, "lib.py") == "x = 1\n"
    assert read(repo, "README.md") == "hello\n"
    assert git(nested, "status", "--porcelain") == ""
    await redo(client)
    assert read(nested, "added.py") == "y = 2\n"
    assert read(nested, "pkg/new.txt") == "new in nested\n"
    assert git(nested, "status", "--porcelain") == "?? added.py\n?? pkg/\n"


# Ensures undo replaces a directory-turned-symlink by a real directory, never writing outside.
async def test_symlink_escape_refused(client, repo: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    write(outside, "app.py", "outside app, must not change\n")
    write(outside, "keep.txt", "outside keep\n")
    outside_before = tree_state(outside)
    write(repo, "src/util/helpers.py", "def helper(): ...\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "util")
    await capture(client)
    shutil.rmtree(repo / "src")
    os.symlink(outside, repo / "src")
    await undo(client)
    assert tree_state(outside) == outside_before
    assert not (repo / "src").is_symlink()
    assert (repo / "src").is_dir()
    assert read(repo, "src/app.py") == "print('v1')\n"
    assert read(repo, "src/util/helpers.py") == "def helper(): ...\n"
    assert status(repo) == ""


# Ensures undo after the agent committed reports headMoved and leaves HEAD and branches alone.
async def test_head_moved_during_turn(client, repo: Path):
    head_before = git(repo, "rev-parse", "HEAD").strip()
    await capture(client)
    write(repo, "README.md", "agent\n")
    git(repo, "commit", "-q", "-am", "agent commit")
    head_after = git(repo, "rev-parse", "HEAD").strip()
    refs = git(repo, "for-each-ref", "refs/heads", "refs/tags")
    result = await undo(client)
    moved = result["headMoved"]
    assert (moved["oldHead"], moved["newHead"]) == (head_before, head_after)
    assert "HEAD" in result["message"]
    assert git(repo, "rev-parse", "HEAD").strip() == head_after
    assert git(repo, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    assert git(repo, "for-each-ref", "refs/heads", "refs/tags") == refs
    assert read(repo, "README.md") == "hello\n"


async def _undo_refuses_over_an_unsaved_edit(client, repo: Path, opened: Path) -> None:
    """The agent rewrites README.md, the user edits it unsaved (the editor opened the
    folder as `opened`): the undo must refuse, naming it, and write nothing."""
    await capture(client)
    write(repo, "README.md", "agent\n")
    uri = open_document(client, opened / "README.md", "agent\n", "markdown")
    edit_unsaved(client, uri, "unsaved edit\n")
    data = await expect_conflict(client, "snapshot/undo")
    assert data["files"] == ["README.md"]
    assert read(repo, "README.md") == "agent\n"
    assert (await list_turns(client))["canRedo"] is False


# Ensures undo refuses to overwrite a file open in the editor with unsaved changes.
async def test_unsaved_editor_changes_conflict(client, repo: Path):
    await _undo_refuses_over_an_unsaved_edit(client, repo, repo)


# Ensures a forced undo over an editor's unsaved text alone keeps no rescued version: the
# file on disk held the agent's bytes, no edit of the user's, so "Put Back My Changes"
# (VS Code, after such an undo) wrote the agent's text back under the undone turn.
async def test_a_forced_undo_over_unsaved_text_alone_rescues_nothing(client, repo: Path):
    await _undo_refuses_over_an_unsaved_edit(client, repo, repo)
    forced = await request(client, "snapshot/undo", {"force": True})
    assert "rescued" not in forced and "rescued version" not in forced["message"]
    assert (await list_turns(client))["rescued"] == []
    assert read(repo, "README.md") == "hello\n"


# Ensures a document opened already unlike its file (a buffer VS Code's hot exit restores,
# one edited before the server started) counts as unsaved: the undo took it as clean, as
# of the version it opened with, and overwrote the file without a conflict. A document
# opened as the file is, but with CRLF line ends or a BOM, is not.
async def test_document_opened_with_unsaved_text_conflicts(client, repo: Path):
    await capture(client)
    write(repo, "README.md", "agent\n")
    write(repo, "src/app.py", "print('agent')\n")
    open_document(client, repo / "README.md", "restored, never saved\n", "markdown")
    open_document(client, repo / "src/app.py", "\ufeffprint('agent')\r\n", "python")
    with pytest.raises(JsonRpcException) as conflict:
        await request(client, "snapshot/undo")
    assert to_plain(conflict.value.data)["files"] == ["README.md"]
    assert "unsaved changes in the editor: README.md" in conflict.value.message
    assert read(repo, "README.md") == "agent\n"


# Ensures the unsaved-changes check holds for a folder the editor opened by a symlinked
# path: its documents' URIs name the link, where the workspace's root is resolved, and the
# undo used to overwrite the unsaved file without a conflict.
async def test_unsaved_changes_conflict_through_a_symlinked_folder(repo: Path, tmp_path: Path):
    link = tmp_path / "linked-project"
    link.symlink_to(repo)
    async with start_server(link) as client:
        await _undo_refuses_over_an_unsaved_edit(client, repo, link)


# Ensures a setting changed to a value it refuses takes its default, as its one warning
# says, where the value before stayed in force (here a file limit of 1 that refused every
# capture until a restart), and that a setting the client drops is the default again.
async def test_refused_or_dropped_setting_is_the_default(repo: Path):
    async with start_server(repo, snapshotFileLimit=1) as client:
        with pytest.raises(JsonRpcException) as refused:
            await capture(client)
        assert to_plain(refused.value.data)["reason"] == "workspaceTooLarge"
        for section in ({"snapshotFileLimit": "oops"}, {"snapshotFileLimit": True}, {}):
            client.set_configuration(section, section="turnback")
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"turnback": section})
            )
            assert (await capture(client))["state"] == "active", section
        warnings = [m.message for m in client.messages if "snapshotFileLimit" in m.message]
        assert len(warnings) == 2 and all("using default" in w for w in warnings)
        # Each value as the user wrote it in JSON, not as Python prints it ('oops', True).
        assert '= "oops" ignored' in warnings[0] and "= true ignored" in warnings[1]
        client.workspace_did_change_configuration(  # a section that is not an object
            types.DidChangeConfigurationParams(settings={"turnback": "oops"})
        )
        await capture(client)
        assert any("not an object" in m.message for m in client.messages)


# Ensures a file undo writes into a setgid directory gets that directory's group, as a
# file created there would, although it is staged elsewhere first.
@pytest.mark.skipif(os.geteuid() != 0, reason="needs a group other than our own: root")
def test_restored_file_inherits_a_setgid_directory_group(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"shared/a.txt": "v1\n"})
    os.chown(repo / "shared", -1, 12345)
    os.chmod(repo / "shared", 0o2775)
    os.chown(repo / "shared/a.txt", -1, 12345)
    engine = Engine(str(repo))
    engine.capture(session="s")
    write(repo, "shared/a.txt", "v2 by the agent\n")
    engine.capture(session="s", phase="after")
    engine.undo("s", RestoreOptions())
    assert (repo / "shared/a.txt").read_text() == "v1\n"
    assert os.stat(repo / "shared/a.txt").st_gid == 12345
