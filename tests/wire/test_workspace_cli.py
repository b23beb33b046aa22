"""One turn across a folder of repositories through the real CLI and hooks: undo and redo
from the command line, a session on a member repository beside one on its parent, and an
agent hook that runs from inside a nested repository."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import (
    SERVER_ENV,
    cli_json,
    git,
    list_turns,
    make_repo,
    read,
    run_cli,
    start_server,
    tree_state,
    undo,
    write,
)
from helpers.workspace import agent_edits, repo_git_state, two_repo_folder
from turnback.engine import Engine
from turnback.errors import Conflict


def run_hook(root: Path, event: str, payload: dict, env: dict[str, str]):
    """`turnback hook claude-code EVENT` in `root`, the payload on stdin, as Claude Code runs it."""
    return run_cli(
        root, "hook", "claude-code", event, env={**SERVER_ENV, **env}, input=json.dumps(payload)
    )


# Ensures a folder of two repositories and a loose file is undone and redone exactly, from
# the CLI, with paths relative to the folder and every repository's git state untouched.
def test_folder_of_two_repositories_undo_redo_cli(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    before, git_before = tree_state(ws), {r: repo_git_state(ws / r) for r in ("api", "web")}
    turn = cli_json(ws, "capture", "--label", "both")
    assert [r["path"] for r in turn["repositories"]] == ["api", "web"]
    assert turn["skipped"] == []  # no more `nestedRepository`
    agent_edits(ws)
    cli_json(ws, "capture", "--phase", "after")
    after = tree_state(ws)
    git_after = {r: repo_git_state(ws / r) for r in ("api", "web")}

    diff = cli_json(ws, "diff")
    assert sorted(f["path"] for f in diff["files"]) == [
        "api/lib/util.py",
        "api/main.py",
        "notes.md",
        "web/new.js",
    ]
    undone = cli_json(ws, "undo")
    assert sorted((f["path"], f["action"]) for f in undone["files"]) == [
        ("api/lib/util.py", "created"),
        ("api/main.py", "modified"),
        ("notes.md", "modified"),
        ("web/new.js", "deleted"),
    ]
    assert tree_state(ws) == before
    assert {r: repo_git_state(ws / r) for r in ("api", "web")} == git_before
    cli_json(ws, "redo")
    assert tree_state(ws) == after
    assert {r: repo_git_state(ws / r) for r in ("api", "web")} == git_after
    shown = run_cli(ws, "capture", "--label", "next")
    assert "repositories: api, web" in shown.stdout  # the human output names them


# Ensures the CLI run from inside a nested repository acts on that repository alone, and
# that a parent-folder undo sees its changes as conflicts, never clobbering them.
def test_overlapping_sessions_parent_and_member(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    parent = Engine(str(ws))
    parent.capture(label="parent turn")
    write(ws, "api/main.py", "api v2\n")
    parent.capture(phase="after")
    inner = cli_json(ws / "api", "capture", "--label", "api turn")
    assert "repositories" not in inner
    write(ws, "api/main.py", "api v3 from the api session\n")
    cli_json(ws / "api", "capture", "--phase", "after")
    with pytest.raises(Conflict) as refused:
        parent.undo()
    assert refused.value.details["files"] == ["api/main.py"]
    assert (ws / "api/main.py").read_text() == "api v3 from the api session\n"
    done = run_cli(ws / "api", "undo")
    assert done.returncode == 0, done.stderr
    assert (ws / "api/main.py").read_text() == "api v2\n"
    parent.undo()
    assert (ws / "api/main.py").read_text() == "api v1\n"


# Ensures an agent whose shell `cd`-ed into a nested repository still seals the workspace's
# turn: the "after" hook (its cwd now `api`) finds the note its "before" hook left.
@pytest.mark.parametrize("root_is_repository", [False, True], ids=["plain", "git"])
def test_hooks_seal_the_workspace_turn_from_inside_a_member(tmp_path: Path, root_is_repository):
    ws = two_repo_folder(tmp_path / "ws")
    if root_is_repository:
        git(ws, "init", "-q", "-b", "main")
    home = tmp_path / "home"  # the state directory of hooks in plain folders
    env = {"HOME": str(home), "XDG_STATE_HOME": str(home / "state")}
    session = {"session_id": "s1", "prompt": "change both"}
    before = run_hook(ws, "UserPromptSubmit", {**session, "cwd": str(ws)}, env)
    assert before.returncode == 0, before.stderr
    write(ws, "api/main.py", "api v2\n")
    after = run_hook(ws / "api", "Stop", {**session, "cwd": str(ws / "api")}, env)
    assert after.returncode == 0 and "turnback" not in after.stdout, after.stdout
    listing = cli_json(ws, "list")
    assert listing["turns"][0]["sealed"], listing
    assert [r["path"] for r in listing["turns"][0]["repositories"]] == ["api", "web"]


# Proves a git directory inside the workspace that is not named `.git` (a local bare remote
# the agent pushes to, a member's --separate-git-dir) is reported and never captured or
# written: undo puts the member's file back and leaves the bare repository's branch and
# the pushed commit where they are, where it used to rewind one and delete the other.
def test_git_directories_in_the_workspace_are_left_alone(tmp_path: Path):
    folder = tmp_path / "folder"
    git(tmp_path, "init", "-q", "--bare", str(folder / "origin.git"))
    git(tmp_path, "clone", "-q", str(folder / "origin.git"), str(folder / "app"))
    write(folder, "app/f.txt", "v1\n")
    git(folder / "app", "add", "-A")
    git(folder / "app", "commit", "-qm", "v1")
    git(folder / "app", "push", "-q", "origin", "HEAD")
    git(tmp_path, "init", "-q", "--separate-git-dir", str(folder / "c.git"), str(folder / "c"))
    opened = cli_json(folder, "capture", "--label", "t1")
    reported = {s["path"]: s["reason"] for s in opened["skipped"]}
    assert reported == {"origin.git": "nestedRepository", "c.git": "nestedRepository"}
    write(folder, "app/f.txt", "v2\n")
    git(folder / "app", "commit", "-qam", "v2")
    git(folder / "app", "push", "-q", "origin", "HEAD")
    pushed = git(folder / "origin.git", "rev-parse", "HEAD").strip()
    bare_state = tree_state(folder / "origin.git")
    cli_json(folder, "capture", "--phase", "after")
    undone = cli_json(folder, "undo")
    assert [f["path"] for f in undone["files"]] == ["app/f.txt"]
    assert (folder / "app/f.txt").read_text() == "v1\n"
    assert git(folder / "origin.git", "rev-parse", "HEAD").strip() == pushed
    assert tree_state(folder / "origin.git") == bare_state


# Proves a repository `git add` embedded without a .gitmodules entry (git only warns: a
# gitlink in the index) is part of the workspace like a submodule: the agent's edit inside
# it was neither captured nor undone, and nothing said so.
def test_embedded_repository_without_gitmodules(tmp_path: Path):
    outer = make_repo(tmp_path / "outer", {"a.txt": "a\n"})
    make_repo(outer / "inner", {"x.txt": "x\n"})
    git(outer, "add", "inner")  # "You've added another git repository inside your current one"
    git(outer, "commit", "-q", "-m", "embed inner")
    states = {repo: repo_git_state(repo) for repo in (outer, outer / "inner")}
    start = tree_state(outer)
    turn = cli_json(outer, "capture", "--label", "turn")
    assert [r["path"] for r in turn["repositories"]] == ["inner"]
    write(outer, "inner/x.txt", "agent\n")
    cli_json(outer, "capture", "--phase", "after")
    assert [f["path"] for f in cli_json(outer, "diff")["files"]] == ["inner/x.txt"]
    cli_json(outer, "undo")
    assert tree_state(outer) == start
    assert {repo: repo_git_state(repo) for repo in states} == states


# Ensures an editor's server started before the harness's first capture still undoes the
# turn's edits inside a nested repository: it had read the members once, as it started
# (none yet), and kept the nested file as "nestedRepository" where the CLI undid it.
async def test_server_started_first_undoes_a_cli_turn_in_a_nested_repository(tmp_path: Path):
    outer = tmp_path / "outer"
    write(outer, "o.txt", "O0\n")
    make_repo(outer / "inner", {"i.txt": "I0\n"})
    async with start_server(outer) as client:
        assert (await list_turns(client))["turns"] == []
        cli_json(outer, "capture", "--label", "T")
        write(outer, "o.txt", "O agent\n")
        write(outer, "inner/i.txt", "I agent\n")
        cli_json(outer, "capture", "--phase", "after")
        undone = await undo(client)
    assert undone["kept"] == []
    assert read(outer, "o.txt") == "O0\n" and read(outer, "inner/i.txt") == "I0\n"


# Ensures a plain folder whose agent runs `git init` at its top (scaffolding a project)
# keeps its timeline: the new repository had none, so the turn's "after" failed with "no
# active turn", `turnback undo` said "Nothing to undo", and the agent's edits stayed.
def test_git_init_at_the_top_of_a_plain_folder_keeps_its_turns(tmp_path: Path):
    folder = tmp_path / "project"
    write(folder, "notes.md", "notes\n")
    cli_json(folder, "capture", "--label", "scaffold")
    write(folder, "notes.md", "the agent's notes\n")
    write(folder, "app.py", "print('new')\n")
    git(tmp_path, "init", "-q", str(folder))
    git(folder, "add", "notes.md")
    git(folder, "commit", "-qm", "scaffold")
    sealed = cli_json(folder, "capture", "--phase", "after")
    assert sealed["sealed"] is True
    undone = cli_json(folder, "undo")
    assert sorted(f["path"] for f in undone["files"]) == ["app.py", "notes.md"]
    assert read(folder, "notes.md") == "notes\n" and not (folder / "app.py").exists()
    assert (folder / ".git").is_dir()  # the agent's repository is left as it is


# Ensures a command run in a subfolder of a plain folder acts on the folder's turns, as in a
# git work tree: `turnback undo` from `src/` said "Nothing to undo", left the agent's edit,
# and made an empty shadow of `src/` of its own.
def test_a_plain_folders_turns_from_a_subfolder(tmp_path: Path):
    folder = tmp_path / "project"
    write(folder, "src/app.py", "print(1)\n")
    cli_json(folder, "capture", "--label", "agent")
    write(folder, "src/app.py", "print('agent')\n")
    cli_json(folder, "capture", "--phase", "after")
    src = folder / "src"
    assert [t["label"] for t in cli_json(src, "list")["turns"]] == ["agent"]
    undone = cli_json(src, "undo")
    assert [f["path"] for f in undone["files"]] == ["src/app.py"]
    assert read(folder, "src/app.py") == "print(1)\n"
    shadows = (Path(SERVER_ENV["TURNBACK_DATA_DIR"]) / "shadows").glob("src-*")
    assert not [s for s in shadows if (s / "workdir").read_text().strip() == str(src)]


# Ensures a repository that holds turns of its own is not hidden by a shadow that held the
# folder's turns before its `git init`: an older turnback recorded the repository's turns
# in `.git`, and after the upgrade `list` showed only the plain folder's turn and `undo`
# acted on that stale timeline.
def test_a_repositorys_own_turns_win_over_its_old_shadow(tmp_path: Path):
    folder = tmp_path / "project"
    write(folder, "notes.md", "notes\n")
    cli_json(folder, "capture", "--label", "plain folder")
    shadows = (Path(SERVER_ENV["TURNBACK_DATA_DIR"]) / "shadows").glob("project-*")
    [shadow] = [s for s in shadows if (s / "workdir").read_text().strip() == str(folder)]
    aside = shadow.with_name(shadow.name + ".aside")
    shadow.rename(aside)  # as an older turnback, which never looked at the shadow
    git(tmp_path, "init", "-q", str(folder))
    cli_json(folder, "capture", "--label", "in the repository")
    write(folder, "notes.md", "the agent's notes\n")
    cli_json(folder, "capture", "--phase", "after")
    aside.rename(shadow)
    listing = cli_json(folder, "list")
    assert [t["label"] for t in listing["turns"]] == ["in the repository"]
    cli_json(folder, "undo")
    assert read(folder, "notes.md") == "notes\n"


# Ensures a workspace that is a partial clone (`--filter=blob:none`) keeps the files of a
# nested clone whose trees it already had without their blobs: the undo of the agent's
# `rm -rf` of that clone refused "missing object", the files in no store turnback could read.
def test_partial_clone_workspace_keeps_a_nested_clones_files(tmp_path: Path):
    source = make_repo(tmp_path / "src", {"lib/lib.py": "old version\n", "README": "readme\n"})
    write(source, "lib/lib.py", "new version\n")
    git(source, "commit", "-q", "-am", "new")
    git(tmp_path, "clone", "-q", "--bare", str(source), "origin.git")
    git(tmp_path / "origin.git", "config", "uploadpack.allowFilter", "true")
    origin = (tmp_path / "origin.git").as_uri()
    git(tmp_path, "clone", "-q", "--filter=blob:none", origin, "proj")
    proj = tmp_path / "proj"
    assert "?" in git(proj, "rev-list", "--objects", "--missing=print", "--all")  # partial
    git(proj, "clone", "-q", origin, "oldcopy")
    git(proj / "oldcopy", "checkout", "-q", "HEAD~1")  # its trees are the workspace's too
    write(proj, "oldcopy/NOTES", "my notes\n")
    before = tree_state(proj / "oldcopy")
    cli_json(proj, "capture", "--label", "turn")
    shutil.rmtree(proj / "oldcopy")
    cli_json(proj, "capture", "--phase", "after")
    undone = cli_json(proj, "undo")
    assert undone["turnsUndone"] == 1
    assert {k: v for k, v in tree_state(proj / "oldcopy").items() if not k.startswith(".git")} == {
        k: v for k, v in before.items() if not k.startswith(".git")
    }
