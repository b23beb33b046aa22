"""Rescued versions: what a forced redo (or undo) overwrote is listed, put back and kept.

Through the real server (snapshot/list, snapshot/rescue, snapshot/prune) and the CLI
(`turnback list`, `turnback rescue`, `turnback prune --rescued`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from helpers import (
    SERVER_ENV,
    cli_json,
    edit_unsaved,
    git,
    open_document,
    read,
    request,
    run_cli,
    write,
)
from turnback.engine import Engine
from turnback.history.timeline import RescuedVersion, Timeline
from turnback.wire import rescued


def _undo_edit_forced_redo(repo: Path, run) -> None:
    """A turn edits two files; undo; the user edits both; redo refuses, pointing at rescue;
    a forced redo overwrites them."""
    run("capture", label="turn")
    write(repo, "src/app.py", "print('agent')\n")
    write(repo, "README.md", "agent readme\n")
    run("capture", phase="after")
    run("undo")
    write(repo, "src/app.py", "print('mine')\n")
    write(repo, "README.md", "my readme\n")
    refused = run_cli(repo, "redo")
    assert refused.returncode == 1 and "rescue can bring them back" in refused.stderr
    run("redo", force=True)
    assert read(repo, "src/app.py") == "print('agent')\n"


def _server(client):
    """`run("undo", force=True)`: a snapshot/* request to the test's server."""

    async def run(command: str, **params):
        return await request(client, f"snapshot/{command}", params)

    return run


def _cli(repo: Path):
    def run(command: str, **options) -> dict:
        args = [command]
        for name, value in options.items():
            flag = "--" + name.replace("_", "-")
            args += [flag] if value is True else [flag, str(value)]
        return cli_json(repo, *args)

    return run


async def _async_forced_redo(repo: Path, run, readme_too: bool = True) -> None:
    """A turn changes src/app.py (and README.md), is undone, the user edits the same
    files, and a forced redo overwrites those edits: they become a rescued version."""
    await run("capture", label="turn")
    write(repo, "src/app.py", "print('agent')\n")
    if readme_too:
        write(repo, "README.md", "agent readme\n")
    await run("capture", phase="after")
    await run("undo")
    write(repo, "src/app.py", "print('mine')\n")
    if readme_too:
        write(repo, "README.md", "my readme\n")
    await run("redo", force=True)


def _rescued(listing: dict) -> list[dict]:
    return listing["rescued"]


# Ensures snapshot/list returns a forced redo's overwritten edit as a rescued version
# {id, createdAt, reason, files}, and that its commit holds the user's bytes.
async def test_list_shows_what_a_forced_redo_overwrote(client, repo: Path):
    run = _server(client)

    await _async_forced_redo(repo, run, readme_too=False)

    [version] = (await run("list"))["rescued"]
    assert set(version) == {"id", "createdAt", "reason", "files"}
    assert version["reason"] == "forcedRedo" and version["files"] == ["src/app.py"]
    assert version["createdAt"].endswith("Z") and len(version["id"]) == 16
    assert git(repo, "show", f"{version['id']}:src/app.py") == "print('mine')\n"


# Ensures snapshot/rescue puts the overwritten edit back byte for byte, saves what it
# replaced as a new rescued version (newest first in list), and that rescuing that one
# brings the replaced content back: a rescue loses nothing either.
async def test_rescue_puts_back_and_rescues_what_it_replaced(client, repo: Path):
    run = _server(client)

    await _async_forced_redo(repo, run, readme_too=False)
    [forced] = (await run("list"))["rescued"]

    result = await run("rescue", id=forced["id"])
    assert read(repo, "src/app.py") == "print('mine')\n"
    assert result["files"] == [{"path": "src/app.py", "action": "modified"}]
    assert result["rescued"]["id"] == forced["id"] and result["dryRun"] is False
    replaced = result["replaced"]
    assert replaced["reason"] == "replacedByRescue" and replaced["files"] == ["src/app.py"]
    listing = await run("list")
    assert [v["id"] for v in listing["rescued"]] == [replaced["id"], forced["id"]]
    assert [t["state"] for t in listing["turns"]] == ["active"], "turns are untouched"

    await run("rescue", id=replaced["id"])
    assert read(repo, "src/app.py") == "print('agent')\n"
    again = await run("rescue", id=replaced["id"])
    assert again["files"] == [] and again["replaced"] is None
    assert again["message"].startswith("Nothing to rescue")


# Ensures `paths` restores only the named files (relative or absolute), and a bad id or
# path is -32602 naming its field, with nothing written.
async def test_rescue_paths_and_bad_params(client, repo: Path):
    run = _server(client)

    await _async_forced_redo(repo, run)
    [version] = (await run("list"))["rescued"]
    assert version["files"] == ["README.md", "src/app.py"]

    dry = await run("rescue", id=version["id"], paths=["src/app.py"], dryRun=True)
    assert dry["files"] == [{"path": "src/app.py", "action": "modified"}] and dry["dryRun"]
    assert read(repo, "src/app.py") == "print('agent')\n"
    await run("rescue", id=version["id"], paths=[str(repo / "src")])
    assert read(repo, "src/app.py") == "print('mine')\n"
    assert read(repo, "README.md") == "agent readme\n"

    for params, field in (
        ({"id": "0123456789abcdef"}, "id"),
        ({}, "id"),
        ({"id": 7}, "id"),
        ({"id": version["id"], "paths": ["docs/nothing.md"]}, "paths"),
        ({"id": version["id"], "paths": "README.md"}, "paths"),
        ({"id": version["id"], "paths": ["../outside"]}, "paths"),
        ({"id": version["id"], "paths": []}, "paths"),  # an empty selection: never "all"
    ):
        with pytest.raises(JsonRpcException) as error:
            await run("rescue", **params)
        assert error.value.code == -32602, params
        assert error.value.data["field"] == field, params
    assert read(repo, "README.md") == "agent readme\n"


# Ensures prune keeps rescued versions (even when it drops every turn, the session
# stays for them) until `rescued: true` asks, and then reports what it removed.
async def test_prune_keeps_rescued_versions_unless_asked(client, repo: Path):
    run = _server(client)

    await _async_forced_redo(repo, run)
    [version] = (await run("list"))["rescued"]
    pruned = await run("prune", keep=0)
    assert len(pruned["removedTurns"]) == 1 and pruned["removedSessions"] == []
    assert pruned["removedRescued"] == []
    listing = await run("list")
    assert listing["turns"] == [] and listing["rescued"] == [version]
    git(repo, "gc", "-q", "--prune=now")
    await run("rescue", id=version["id"], paths=["README.md"])
    assert read(repo, "README.md") == "my readme\n"

    pruned = await run("prune", keep=1, rescued=True)
    assert [r["id"] for r in pruned["removedRescued"]] == [version["id"]]
    pruned = await run("prune", keep=0, rescued=True)
    assert len(pruned["removedRescued"]) == 1 and pruned["removedSessions"] == ["default"]
    assert (await run("list"))["rescued"] == []


# Ensures a forced undo's overwritten edit is rescued too, so it stays findable after a
# new capture clears the redo stack that held it.
def test_forced_undo_edit_survives_a_new_capture(repo: Path):
    run = _cli(repo)
    run("capture", label="turn")
    write(repo, "src/app.py", "print('agent')\n")
    run("capture", phase="after")
    write(repo, "src/app.py", "print('mine, after the turn')\n")
    forced = run("undo", force=True)
    run("capture", label="next turn")  # the redo stack, and its saved state, are gone
    [version] = run("list")["rescued"]
    assert forced["rescued"] == version  # said by the undo itself, not only by `list`
    assert f"rescued version {version['id']}" in forced["message"]
    assert version["reason"] == "forcedUndo" and version["files"] == ["src/app.py"]
    cli_json(repo, "rescue", version["id"])
    assert read(repo, "src/app.py") == "print('mine, after the turn')\n"


# Ensures a forced undo on the command line says how to put back what it overwrote.
def test_cli_forced_undo_says_how_to_put_back(repo: Path):
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "src/app.py", "print('agent')\n")
    cli_json(repo, "capture", "--phase", "after")
    write(repo, "src/app.py", "print('mine')\n")
    done = run_cli(repo, "undo", "--force")
    [version] = cli_json(repo, "list")["rescued"]
    assert f"Put them back with: turnback rescue {version['id']}" in done.stdout.splitlines()


# Ensures a forced undo that keeps a conflicting path anyway (the user's folder where the
# turn left a symlink: blocked) neither says it overwrote it nor keeps a rescued version
# that `turnback rescue` then finds nothing in.
def test_forced_undo_keeping_a_blocked_path_rescues_nothing(repo: Path):
    write(repo, "f", "f\n")
    git(repo, "add", "f")
    git(repo, "commit", "-q", "-m", "f")
    cli_json(repo, "capture", "--label", "turn")
    (repo / "f").unlink()
    (repo / "f").symlink_to("src/app.py")
    cli_json(repo, "capture", "--phase", "after")
    (repo / "f").unlink()
    write(repo, "f/mine.txt", "the user's\n")
    done = run_cli(repo, "undo", "--force")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kept     f (blocked: f/mine.txt)" in done.stdout
    assert "overwrote" not in done.stdout and "turnback rescue" not in done.stdout
    assert cli_json(repo, "list")["rescued"] == []
    assert read(repo, "f/mine.txt") == "the user's\n"


# Ensures the CLI shows rescued versions in `turnback list`, puts one file back with
# `turnback rescue ID PATH` given relative to the current directory, finds a version in
# its own session when another is the default, and prunes them only with --rescued.
def test_cli_list_rescue_and_prune(repo: Path):
    _undo_edit_forced_redo(repo, _cli(repo))
    [version] = cli_json(repo, "list")["rescued"]
    listing = run_cli(repo, "list").stdout
    assert "Rescued versions" in listing
    assert f"  {version['id']}  " in listing and "forcedRedo: README.md, src/app.py" in listing

    done = run_cli(repo / "src", "rescue", version["id"], "app.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Put back 1 file of rescued version")
    assert "modified src/app.py" in done.stdout
    assert read(repo, "src/app.py") == "print('mine')\n"
    assert read(repo, "README.md") == "agent readme\n"

    assert run_cli(repo, "rescue", "nope").returncode == 2
    cli_json(repo, "capture", "--session", "newer")  # now the default session
    assert cli_json(repo, "list")["session"] == "newer"
    moved = cli_json(repo, "rescue", version["id"], "README.md")  # found in its own session
    assert moved["session"] == "default" and read(repo, "README.md") == "my readme\n"
    refused = run_cli(repo, "rescue", "--session", "newer", version["id"])
    assert refused.returncode == 2 and "no rescued version" in refused.stderr
    cli_json(repo, "prune", "--keep", "0", "--session", "newer")
    assert run_cli(repo, "prune", "--keep", "0").returncode == 0
    assert len(cli_json(repo, "list")["rescued"]) == 3
    pruned = cli_json(repo, "prune", "--keep", "0", "--rescued")
    assert len(pruned["removedRescued"]) == 3
    assert cli_json(repo, "list")["rescued"] == []


# Ensures a rescue killed midway is rolled back by the next command, like undo and redo:
# the journal covers it, and the work tree is whole.
def test_interrupted_rescue_is_recovered(repo: Path):
    _undo_edit_forced_redo(repo, _cli(repo))
    [version] = cli_json(repo, "list")["rescued"]
    killed = subprocess.run(
        [sys.executable, "-m", "turnback", "rescue", version["id"]],
        cwd=repo,
        env={**SERVER_ENV, "TURNBACK_FAULT_AFTER": "3"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert killed.returncode < 0, "the fault must kill the rescue midway"
    done = run_cli(repo, "list", "--json")
    assert "rolled back an interrupted rescue" in done.stderr
    assert read(repo, "src/app.py") == "print('agent')\n"
    assert read(repo, "README.md") == "agent readme\n"
    assert len(json.loads(done.stdout)["rescued"]) == 1


# Ensures timelines written before rescued versions carried details (bare commit ids)
# still load, list and save: each becomes a forcedRedo version with no known files.
def test_old_timeline_with_bare_rescued_ids_still_loads(repo: Path):
    commit = git(repo, "rev-parse", "HEAD").strip()
    old = {"session": "default", "rescued": [commit], "turns": []}
    timeline = Timeline.from_json(json.loads(json.dumps(old)))
    [version] = timeline.rescued
    assert (version.id, version.commit, version.reason) == (commit[:16], commit, "forcedRedo")
    assert rescued(version.to_result()) == {
        "id": commit[:16],
        "createdAt": "",
        "reason": "forcedRedo",
        "files": [],
    }
    assert Timeline.from_json(timeline.to_json()).rescued == [version]


# Ensures a rescued version an older turnback kept as a bare commit id (no files noted)
# can be put back by naming its files: `rescue ID` said "Nothing to rescue: the files
# already hold" it, and `rescue ID PATH` that it held no such file, so the user's edit the
# forced redo overwrote could not be brought back.
def test_a_rescued_version_an_older_turnback_kept_is_put_back_by_name(repo: Path):
    run = _cli(repo)
    run("capture", label="turn")
    write(repo, "src/app.py", "print('agent')\n")
    run("capture", phase="after")
    run("undo")
    write(repo, "src/app.py", "print('mine')\n")
    run("redo", force=True)
    engine = Engine(str(repo))
    timeline = engine.store.load("default")
    assert timeline is not None
    [kept] = timeline.rescued
    timeline.rescued = [RescuedVersion.from_json(kept.commit)]  # as an older turnback wrote it
    engine.store.save(timeline)
    engine.close()
    refused = run_cli(repo, "rescue", kept.id)
    assert refused.returncode == 2 and "did not note its files" in refused.stderr
    assert read(repo, "src/app.py") == "print('agent')\n"
    cli_json(repo, "rescue", kept.id, "src")
    assert read(repo, "src/app.py") == "print('mine')\n"


# Ensures a rescue never silently overwrites a file open in the editor with unsaved
# changes: a conflict naming it, nothing written; `force` writes it.
async def test_rescue_over_unsaved_editor_changes_needs_force(client, repo: Path):
    run = _server(client)

    await _async_forced_redo(repo, run)
    [version] = (await run("list"))["rescued"]
    uri = open_document(client, repo / "README.md", "agent readme\n", "markdown")
    edit_unsaved(client, uri, "unsaved\n")
    with pytest.raises(JsonRpcException) as conflict:
        await run("rescue", id=version["id"])
    assert conflict.value.code == -32803
    assert conflict.value.data["reason"] == "conflict"
    assert conflict.value.data["files"] == ["README.md"]
    assert read(repo, "README.md") == "agent readme\n"
    assert read(repo, "src/app.py") == "print('agent')\n"
    await run("rescue", id=version["id"], force=True)
    assert read(repo, "README.md") == "my readme\n"
