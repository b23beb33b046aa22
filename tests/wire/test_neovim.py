"""Neovim's built-in LSP client drives the real server through the plugin in editors/neovim.

Headless Neovim installs the plugin as a package (tests/nvim/init.lua links it under a
`pack/*/start` folder on 'packpath', as Neovim's own package manager does), calls
`require("turnback").setup()`, and runs
tests/nvim/driver.lua, which uses the config's commands and functions and reports each step
as a JSON line. At checkpoints the driver waits for this test, which plays the agent (edits
files on disk while a buffer shows one of them) and checks the disk independently.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import SERVER_ENV, make_repo, read, write

NVIM = shutil.which("nvim")
HERE = Path(__file__).parent
PLUGIN = HERE.parents[1] / "editors" / "neovim"
INIT = HERE / "nvim" / "init.lua"
DRIVER = HERE / "nvim" / "driver.lua"
TIMEOUT = 60  # seconds for the whole Neovim session; the Lua side bounds each wait too

V1, AGENT, NEW = "print('v1')\n", "print('agent edit')\n", "print('new file')\n"

pytestmark = pytest.mark.skipif(
    NVIM is None, reason="nvim is not on PATH (apt-get install neovim to run this test)"
)


def run_neovim(
    repo: Path, work: Path, on_step: Callable[[dict], None], scenario: str = ""
) -> tuple[list[dict], str]:
    """Runs the driver in `repo`; calls on_step for each JSON line, then acknowledges it."""
    out = work / "steps.jsonl"
    packages = work / "site"
    (packages / "pack" / "turnback" / "start").mkdir(parents=True)
    (packages / "pack" / "turnback" / "start" / "turnback").symlink_to(PLUGIN)
    log_path = work / "nvim.log"
    env = {
        **SERVER_ENV,
        "PATH": os.environ.get("PATH", ""),
        "TURNBACK_NVIM_CMD": json.dumps([sys.executable, "-m", "turnback", "serve"]),
        "TURNBACK_NVIM_PACKPATH": str(packages),
        "TURNBACK_NVIM_OUT": str(out),
        "TURNBACK_NVIM_WATCHDOG_MS": str((TIMEOUT - 10) * 1000),
        "TURNBACK_NVIM_SCENARIO": scenario,
    }
    env["TURNBACK_NVIM_DRIVER"] = str(DRIVER)
    command = [NVIM, "--headless", "-n", "-i", "NONE", "-u", str(INIT)]
    command += ["-c", "lua dofile(os.getenv('TURNBACK_NVIM_DRIVER'))"]
    steps: list[dict] = []
    deadline = time.monotonic() + TIMEOUT
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log
        )
        try:
            while True:
                exited = proc.poll() is not None
                text = out.read_text() if out.exists() else ""
                lines = text[: text.rfind("\n") + 1].splitlines()  # complete lines only
                for line in lines[len(steps) :]:
                    step = json.loads(line)
                    steps.append(step)
                    on_step(step)
                    (work / f"steps.jsonl.{step['step']}.ok").touch()
                if exited:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"Neovim did not finish in {TIMEOUT}s; steps: {steps}")
                time.sleep(0.02)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
    output = log_path.read_text(errors="replace")
    assert proc.returncode == 0, f"nvim exited {proc.returncode}; steps: {steps}\n{output}"
    return steps, output


# Ensures a Neovim user can capture, list, diff, undo and redo an agent's turn with the
# shipped config, that undo/redo reach the disk and an open buffer, and the server shuts down.
def test_neovim_client_captures_undoes_and_redoes(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", "src/app.py": V1})
    work = tmp_path / "nvim"
    work.mkdir()

    def on_step(step: dict) -> None:
        if step["step"] == "error":
            raise AssertionError(f"the Neovim driver failed: {step['error']}")
        if step["step"] == "captured":  # the agent's turn: edit one file, create another
            write(repo, "src/app.py", AGENT)
            write(repo, "src/new.py", NEW)
        elif step["step"] == "undone":
            assert read(repo, "src/app.py") == V1
            assert not (repo / "src" / "new.py").exists()
        elif step["step"] == "redone":
            assert read(repo, "src/app.py") == AGENT
            assert read(repo, "src/new.py") == NEW

    steps, output = run_neovim(repo, work, on_step)
    by_name = {step["step"]: step for step in steps}
    names = [step["step"] for step in steps]
    assert names == ["attached", "captured", "listed", "diffed", "undone", "redone", "stopped"], (
        f"{steps}\n{output}"
    )

    attached = by_name["attached"]
    assert attached["attached"] is True and attached["name"] == "turnback"
    assert Path(attached["root"]).resolve() == repo.resolve()

    assert by_name["captured"]["said"].startswith("Captured turn 1 (")

    listed = by_name["listed"]
    assert listed["count"] == 1 and listed["turn"] == 1
    assert listed["label"] == "nvim turn" and listed["state"] == "active"
    assert listed["canUndo"] is True and listed["canRedo"] is False
    assert "nvim turn" in listed["said"]

    diffed = by_name["diffed"]
    assert diffed["files"] == {"src/app.py": "modified", "src/new.py": "added"}
    assert diffed["said"] == "Turn 1 changed 2 files"
    assert diffed["filetype"] == "diff"
    assert "-print('v1')" in diffed["lines"] and "+print('agent edit')" in diffed["lines"]
    assert "+print('new file')" in diffed["lines"]

    undone = by_name["undone"]
    assert undone["said"].startswith("Undid 1 turn (2 files changed)"), undone["said"]
    assert undone["app"] == V1 and undone["new"] is None
    assert undone["buffer"] == V1 and undone["modified"] is False  # the open buffer reloaded
    assert undone["states"] == ["undone"] and undone["canRedo"] is True
    assert undone["canUndo"] is False

    redone = by_name["redone"]
    assert redone["said"].startswith("Redid 1 turn (2 files changed)"), redone["said"]
    assert redone["app"] == AGENT and redone["new"] == NEW
    assert redone["buffer"] == AGENT and redone["modified"] is False
    assert redone["states"] == ["active"] and redone["canUndo"] is True
    assert redone["canRedo"] is False

    assert by_name["stopped"]["stopped"] is True
    assert read(repo, "src/app.py") == AGENT and read(repo, "src/new.py") == NEW


# Ensures Neovim's :TurnbackUndo prints the server's refusal while an agent turn (opened by
# a real `turnback hook` process) is running and changes nothing; :TurnbackUndo! forces it.
def test_neovim_undo_refused_while_agent_turn_runs(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", "src/app.py": V1})
    payload = {"session_id": "nv1", "cwd": str(repo), "prompt": "edit", "hook_event_name": "x"}
    hook = subprocess.run(
        [sys.executable, "-m", "turnback", "hook", "claude-code", "UserPromptSubmit"],
        cwd=repo,
        env=SERVER_ENV,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert hook.returncode == 0, hook.stderr
    write(repo, "src/app.py", AGENT)
    work = tmp_path / "nvim"
    work.mkdir()

    def on_step(step: dict) -> None:
        if step["step"] == "error":
            raise AssertionError(f"the Neovim driver failed: {step['error']}")

    steps, output = run_neovim(repo, work, on_step, scenario="running")
    by_name = {step["step"]: step for step in steps}
    assert [s["step"] for s in steps] == ["attached", "refused", "forced", "stopped"], output
    refused = by_name["refused"]
    assert refused["error"] is True and refused["app"] == AGENT
    assert "still running" in refused["said"] and "claude-code session nv1" in refused["said"]
    assert "retry with :TurnbackUndo!" in refused["said"]  # the command, not the protocol's word
    assert "(running)" in refused["list"]
    forced = by_name["forced"]
    assert forced["error"] is False and forced["said"].startswith("Undid 1 turn")
    assert forced["app"] == V1 == read(repo, "src/app.py")


# Ensures a server command that cannot start is said once, as an error naming it, and that
# opening files then raises nothing: each buffer entered threw a Lua stack trace
# ("client_id: expected number, got nil").
def test_neovim_without_a_server_says_so_once(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "b.txt": "b\n"})
    out = tmp_path / "said.json"
    setup = tmp_path / "setup.lua"
    setup.write_text(
        """
SAID = {}
vim.notify = function(msg, level) table.insert(SAID, { msg = msg, level = level or 0 }) end
vim.opt.runtimepath:prepend(os.getenv("TURNBACK_PLUGIN"))
require("turnback").setup({ cmd = { "/nonexistent/turnback", "serve" } })
"""
    )
    report = (
        'lua local f = io.open(os.getenv("TURNBACK_OUT"), "w");'
        " f:write(vim.fn.json_encode({ said = SAID })); f:close()"
    )
    commands = [f"luafile {setup}", "edit a.txt", "edit b.txt", "TurnbackList", report, "qall!"]
    done = subprocess.run(
        [NVIM, "--headless", "-n", "-i", "NONE", "-u", "NONE"]
        + [arg for command in commands for arg in ("-c", command)],
        cwd=repo,
        env={**SERVER_ENV, "TURNBACK_PLUGIN": str(PLUGIN), "TURNBACK_OUT": str(out)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = done.stderr + done.stdout
    assert "stack traceback" not in output and "Error executing" not in output, output
    said = json.loads(out.read_text())["said"]
    errors = [s["msg"] for s in said if s["level"] >= 4 and "turnback" in s["msg"]]
    assert any("could not start" in m and "/nonexistent/turnback" in m for m in errors), said
    assert any("not running" in m for m in errors), said


# Ensures a Neovim user gets back an edit a forced redo overwrote: :TurnbackRescue lists the
# rescued version (its id, reason and file) and, given the id, puts the edit back on disk
# and in the open buffer.
def test_neovim_rescue_puts_back_what_a_forced_redo_overwrote(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n", "src/app.py": V1})
    work = tmp_path / "nvim"
    work.mkdir()
    mine = "print('my edit after the undo')\n"

    def on_step(step: dict) -> None:
        if step["step"] == "error":
            raise AssertionError(f"the Neovim driver failed: {step['error']}")
        if step["step"] == "captured":
            write(repo, "src/app.py", AGENT)
        elif step["step"] == "undone":
            assert read(repo, "src/app.py") == V1
            write(repo, "src/app.py", mine)

    steps, output = run_neovim(repo, work, on_step, scenario="rescue")
    by_name = {step["step"]: step for step in steps}
    assert [s["step"] for s in steps] == ["attached", "captured", "undone", "rescued", "stopped"], (
        f"{steps}\n{output}"
    )
    rescued = by_name["rescued"]
    assert rescued["forced"].startswith("Redid 1 turn"), rescued["forced"]
    version = rescued["listed"].split()[0]  # the forced redo says how to put it back
    assert f"Put them back with :TurnbackRescue {version}" in rescued["forced"]
    assert " forcedRedo " in rescued["listed"] and rescued["listed"].endswith("src/app.py")
    assert rescued["said"].startswith("Put back 1 file of rescued version"), rescued["said"]
    assert rescued["app"] == mine and read(repo, "src/app.py") == mine
    assert rescued["buffer"] == mine and rescued["modified"] is False
