"""An undo never races a running agent: real `turnback hook` processes open turns, the real
CLI and server refuse to undo or redo them while the work tree still changes, and
interrupted turns (no Stop) undo and redo like sealed ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from helpers import (
    SERVER_ENV,
    make_repo,
    read,
    request,
    run_cli,
    start_server,
    to_plain,
    tree_state,
    write,
)

SESSION_ID = "c1f0-run"
SESSION = f"claude-code:{SESSION_ID}"
EXIT_OK, EXIT_FAILED = 0, 1


def claude_payload(root: Path, event: str, prompt: str = "Refactor the app") -> dict:
    """Claude Code's documented hook stdin for `event`."""
    base = {
        "session_id": SESSION_ID,
        "transcript_path": f"/t/{SESSION_ID}.jsonl",
        "cwd": str(root),
        "hook_event_name": event,
    }
    if event == "UserPromptSubmit":
        return {**base, "prompt": prompt, "prompt_id": "p-1"}
    if event == "Stop":
        return {**base, "stop_hook_active": False}
    if event == "StopFailure":
        return {**base, "error": "rate_limit", "last_assistant_message": ""}
    return {**base, "reason": "prompt_input_exit"}


def run_claude_hook(root: Path, event: str, payload: dict) -> None:
    """Runs `turnback hook claude-code EVENT` as Claude Code does; it must exit 0 silently."""
    done = subprocess.run(
        [sys.executable, "-m", "turnback", "hook", "claude-code", event],
        cwd=root,
        env=SERVER_ENV,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stderr


def hook(root: Path, event: str, prompt: str = "Refactor the app") -> None:
    run_claude_hook(root, event, claude_payload(root, event, prompt))


def cli(root: Path, *args: str, quiet: int | None = None) -> subprocess.CompletedProcess:
    """`turnback ARGS`, with the quiet period set through TURNBACK_SETTINGS when given."""
    env = dict(SERVER_ENV)
    if quiet is not None:
        env["TURNBACK_SETTINGS"] = json.dumps({"turnQuietPeriod": quiet})
    return run_cli(root, *args, env=env)


def cli_ok(root: Path, *args: str, quiet: int | None = None) -> dict:
    done = cli(root, *args, "--json", quiet=quiet)
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    return json.loads(done.stdout)


def progress(root: Path, quiet: int | None = None) -> dict[int, str]:
    listing = cli_ok(root, "list", "--session", SESSION, quiet=quiet)
    return {t["turn"]: t["progress"] for t in listing["turns"]}


def agent_writes(root: Path) -> None:
    write(root, "src/app.py", "print('agent')\n")
    write(root, "src/new.py", "x = 1\n")


# Proves a hook-opened turn whose files are still changing refuses undo (exit 1, one line
# naming the harness, its session and the last change; nothing changed on disk), shows as
# running in `turnback list`, and undoes the tree exactly once Stop has sealed it.
def test_undo_refused_while_agent_runs_then_works_after_stop(repo: Path):
    start = tree_state(repo)
    hook(repo, "UserPromptSubmit")
    agent_writes(repo)
    during = tree_state(repo)

    refused = cli(repo, "undo")
    assert refused.returncode == EXIT_FAILED
    [line] = refused.stderr.splitlines()
    assert "claude-code" in line and SESSION_ID in line and "s ago" in line and "force" in line
    assert tree_state(repo) == during
    as_json = cli(repo, "undo", "--json")
    data = json.loads(as_json.stdout)["error"]["data"]
    assert (data["reason"], data["harness"], data["harnessSession"]) == (
        "turnRunning",
        "claude-code",
        SESSION_ID,
    )
    assert 0 <= data["secondsSinceChange"] < 120 and data["turn"] == 1
    listing = cli_ok(repo, "list")
    assert listing["turns"][0]["progress"] == "running"
    assert (listing["running"]["harness"], listing["running"]["session"]) == (
        "claude-code",
        SESSION,
    )
    assert listing["runningElsewhere"] is None  # its own turn, not another session's
    assert "is running (claude-code session" in cli(repo, "list").stdout
    assert cli(repo, "redo").returncode == EXIT_OK  # nothing to redo: not a refusal

    hook(repo, "Stop")
    assert progress(repo) == {1: "sealed"}
    cli_ok(repo, "undo")
    assert tree_state(repo) == start


# Proves --force overrides the refusal: the running turn is undone at once.
def test_force_undoes_a_running_turn(repo: Path):
    start = tree_state(repo)
    hook(repo, "UserPromptSubmit")
    agent_writes(repo)
    assert cli_ok(repo, "undo", "--force")["turnsUndone"] == 1
    assert tree_state(repo) == start


# Proves a turn undone by force while its agent still writes refuses redo (the agent is
# still changing the tree), and redo works with --force.
def test_redo_refused_while_a_force_undone_turn_still_runs(repo: Path):
    hook(repo, "UserPromptSubmit")
    agent_writes(repo)
    cli_ok(repo, "undo", "--force")
    write(repo, "src/late.py", "y = 2\n")  # the agent goes on writing
    refused = cli(repo, "redo", "--json")
    assert refused.returncode == EXIT_FAILED
    assert json.loads(refused.stdout)["error"]["data"]["reason"] == "turnRunning"
    assert cli_ok(repo, "redo", "--force")["turnsRedone"] == 1
    assert read(repo, "src/app.py") == "print('agent')\n"


# Proves an agent turn with no Stop (interrupted) becomes "interrupted" after the quiet
# period; undo then works without --force, seals the turn first, and redo brings back
# exactly what the interrupted turn left.
def test_interrupted_turn_after_quiet_period_undoes_and_redoes(repo: Path):
    start = tree_state(repo)
    hook(repo, "UserPromptSubmit")
    agent_writes(repo)
    left = tree_state(repo)
    assert progress(repo, quiet=60) == {1: "running"}
    time.sleep(1.5)
    assert progress(repo, quiet=1) == {1: "interrupted"}

    undone = cli_ok(repo, "undo", quiet=1)
    assert undone["turnsUndone"] == 1 and undone["turns"][0]["sealed"] is True
    assert tree_state(repo) == start
    assert progress(repo) == {1: "interrupted"}  # sealed by the undo, still says why
    cli_ok(repo, "redo")
    assert tree_state(repo) == left


# Proves a turn's last change is when the disk changed, not the mtime a tool set: files an
# agent extracted with mtimes two hours ahead (a tarball from a machine whose clock was
# ahead) kept an interrupted turn "running" for two hours, and files it copied keeping
# yesterday's mtimes (`cp -p`, `rsync -a`) made a turn still at work look interrupted, so
# the undo went ahead under the running agent.
def test_mtimes_a_tool_set_never_decide_whether_a_turn_runs(repo: Path):
    hook(repo, "UserPromptSubmit")
    agent_writes(repo)
    ahead = time.time() + 2 * 3600
    os.utime(repo / "src/app.py", (ahead, ahead))
    time.sleep(1.5)
    assert progress(repo, quiet=1) == {1: "interrupted"}
    listing = cli_ok(repo, "list", "--session", SESSION, quiet=1)
    assert listing["turns"][0]["progress"] == "interrupted"
    cli_ok(repo, "undo", "--force")  # (sealed; its undo is not the subject)
    hook(repo, "UserPromptSubmit", "Sync the assets")
    time.sleep(1.5)  # the prompt is older than the quiet period; the agent copies now
    write(repo, "assets/logo.txt", "a logo\n")
    yesterday = time.time() - 86400
    os.utime(repo / "assets/logo.txt", (yesterday, yesterday))
    assert progress(repo, quiet=1)[2] == "running"
    assert cli(repo, "undo", quiet=1).returncode == EXIT_FAILED


# Proves the harness's next prompt marks the previous turn interrupted at once (no quiet
# period), while the new one runs; once it ends, undoing both and redoing one brings back
# exactly what the interrupted turn left.
def test_next_prompt_interrupts_the_previous_turn(repo: Path):
    start = tree_state(repo)
    hook(repo, "UserPromptSubmit", "first")
    agent_writes(repo)
    left = tree_state(repo)
    hook(repo, "UserPromptSubmit", "second")
    write(repo, "src/second.py", "z = 3\n")
    assert progress(repo) == {2: "running", 1: "interrupted"}
    assert cli(repo, "undo", "-n", "2").returncode == EXIT_FAILED

    hook(repo, "Stop")
    assert progress(repo) == {2: "sealed", 1: "interrupted"}
    cli_ok(repo, "undo", "-n", "2")
    assert tree_state(repo) == start
    cli_ok(repo, "redo")
    assert tree_state(repo) == left


# Proves Claude Code's StopFailure hook (the turn died on an API error) and SessionEnd hook
# (the session closed mid-turn) mark the turn interrupted and seal it, so undo needs no
# --force, and redo restores what it left.
@pytest.mark.parametrize("event", ["StopFailure", "SessionEnd"])
def test_end_hooks_interrupt_the_turn(repo: Path, event: str):
    start = tree_state(repo)
    hook(repo, "UserPromptSubmit")
    agent_writes(repo)
    left = tree_state(repo)
    hook(repo, event)
    write(repo, "mine.txt", "the user's own file\n")  # after the turn: not part of it
    listing = cli_ok(repo, "list", "--session", SESSION)
    assert (listing["turns"][0]["progress"], listing["turns"][0]["sealed"]) == (
        "interrupted",
        True,
    )
    mine = {"mine.txt": ("file", b"the user's own file\n", False)}
    cli_ok(repo, "undo")
    assert tree_state(repo) == {**start, **mine}
    cli_ok(repo, "redo")
    assert tree_state(repo) == {**left, **mine}


# Proves a turn captured by hand (no harness) is "open", never refused: undo works at once.
def test_hand_made_turn_undoes_as_before(repo: Path):
    start = tree_state(repo)
    cli_ok(repo, "capture", "--label", "t1")
    agent_writes(repo)
    assert progress_default(repo) == {1: "open"}
    assert cli_ok(repo, "undo")["turnsUndone"] == 1
    assert tree_state(repo) == start


def progress_default(root: Path) -> dict[int, str]:
    return {t["turn"]: t["progress"] for t in cli_ok(root, "list")["turns"]}


# Proves the server refuses snapshot/undo of a running turn with RequestFailed reason
# "turnRunning" (data names harness, session, seconds), lists it as running, and undoes
# it with force.
async def test_server_refuses_undo_of_running_turn(repo: Path):
    start = tree_state(repo)
    hook(repo, "UserPromptSubmit")
    agent_writes(repo)
    async with start_server(repo) as client:
        listing = await request(client, "snapshot/list", {"session": SESSION})
        assert listing["turns"][0]["progress"] == "running"
        assert listing["running"]["harnessSession"] == SESSION_ID
        try:
            await request(client, "snapshot/undo", {"session": SESSION})
            raise AssertionError("undo of a running turn was not refused")
        except JsonRpcException as error:
            data = to_plain(error.data)
            assert error.code == -32803
            assert (data["reason"], data["harness"]) == ("turnRunning", "claude-code")
            assert data["harnessSession"] == SESSION_ID
        assert tree_state(repo) != start
        await request(client, "snapshot/undo", {"session": SESSION, "force": True})
    assert tree_state(repo) == start


# Proves the server takes turnQuietPeriod from its settings: with 1 s, a hook-opened turn
# quiet for longer lists as interrupted and undoes without force.
async def test_server_quiet_period_setting(repo: Path):
    start = tree_state(repo)
    hook(repo, "UserPromptSubmit")
    agent_writes(repo)
    time.sleep(1.5)
    async with start_server(repo, turnQuietPeriod=1) as client:
        listing = await request(client, "snapshot/list", {"session": SESSION})
        assert (listing["turns"][0]["progress"], listing["running"]) == ("interrupted", None)
        undone = await request(client, "snapshot/undo", {"session": SESSION})
        assert undone["turnsUndone"] == 1
    assert tree_state(repo) == start


# Proves an undo or redo in one session is refused while another session's agent turn runs
# in the same work tree (the undo deleted the file a running Codex turn had just made), and
# works once that turn has ended.
def test_restore_refused_while_another_sessions_turn_runs(repo: Path):
    cli_ok(repo, "capture", "--session", "mine", "--label", "by hand")
    write(repo, "src/app.py", "print('mine')\n")
    cli_ok(repo, "capture", "--session", "mine", "--phase", "after")
    hook(repo, "UserPromptSubmit")
    write(repo, "src/agent.py", "x = 1\n")  # the other agent is writing now
    during = tree_state(repo)
    # `list` says so before any undo is tried: "undo: yes" alone was refused when pressed.
    listing = cli_ok(repo, "list", "--session", "mine")
    assert listing["running"] is None and listing["canUndo"]
    elsewhere = listing["runningElsewhere"]
    assert (elsewhere["session"], elsewhere["turn"], elsewhere["harness"]) == (
        SESSION,
        1,
        "claude-code",
    )
    text = cli(repo, "list", "--session", "mine").stdout
    assert f"Turn 1 of session '{SESSION}' is running in this work tree" in text

    refused = cli(repo, "undo", "--session", "mine", "--json")
    assert refused.returncode == EXIT_FAILED
    data = json.loads(refused.stdout)["error"]["data"]
    assert (data["reason"], data["session"]) == ("turnRunning", SESSION)
    assert "which shares this work tree" in cli(repo, "undo", "--session", "mine").stderr
    assert tree_state(repo) == during

    hook(repo, "Stop")
    assert cli_ok(repo, "list", "--session", "mine")["runningElsewhere"] is None
    cli_ok(repo, "undo", "--session", "mine")
    assert read(repo, "src/agent.py") == "x = 1\n"  # the turn by hand never made it
    hook(repo, "UserPromptSubmit", "Another task")
    write(repo, "src/agent.py", "x = 2\n")
    refused = cli(repo, "redo", "--session", "mine", "--json")
    assert json.loads(refused.stdout)["error"]["data"]["session"] == SESSION
    assert cli_ok(repo, "redo", "--session", "mine", "--force")["turnsRedone"] == 1
    assert read(repo, "src/app.py") == "print('mine')\n"


# Proves a turn another agent opened before this session's turn began, and never sealed (a
# conversation killed long ago), does not refuse this session's undo: it looked running
# whenever this session's own agent wrote, and refused its undo every time.
def test_an_abandoned_turn_of_another_session_never_refuses(repo: Path):
    hook(repo, "UserPromptSubmit")  # the other agent's turn: its Stop never comes
    write(repo, "src/agent.py", "x = 1\n")
    cli_ok(repo, "capture", "--session", "mine", "--label", "by hand")
    write(repo, "src/app.py", "print('mine')\n")  # a write "now": the old turn looks running
    cli_ok(repo, "capture", "--session", "mine", "--phase", "after")
    assert cli_ok(repo, "undo", "--session", "mine")["turnsUndone"] == 1
    assert read(repo, "src/agent.py") == "x = 1\n"


def claude_hook(root: Path, session_id: str, event: str, transcript: Path) -> None:
    """`turnback hook claude-code EVENT` for another conversation, naming its transcript."""
    payload = {
        "session_id": session_id,
        "transcript_path": str(transcript),
        "cwd": str(root),
        "hook_event_name": event,
        "prompt": f"task {session_id}",
    }
    run_claude_hook(root, event, payload)


# Proves an undo in one conversation is refused while another conversation's agent, whose
# turn began first, still runs (its transcript is still being written): the undo reverted
# that agent's edits under its feet, and once this conversation's next prompt dropped the
# redo, that agent's edit was in no snapshot at all.
def test_an_older_running_turn_of_another_conversation_refuses(repo: Path, tmp_path: Path):
    transcript_a, transcript_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    claude_hook(repo, "A", "UserPromptSubmit", transcript_a)
    transcript_a.write_text("{}\n")
    claude_hook(repo, "B", "UserPromptSubmit", transcript_b)
    write(repo, "src/b.py", "by B\n")
    write(repo, "src/app.py", "print('by A, still running')\n")
    transcript_a.write_text("{}\n{}\n")  # A's conversation goes on
    claude_hook(repo, "B", "Stop", transcript_b)

    refused = cli(repo, "undo", "--session", "claude-code:B", "--json")
    assert refused.returncode == EXIT_FAILED, refused.stdout
    error = json.loads(refused.stdout)["error"]
    assert (error["data"]["reason"], error["data"]["session"]) == ("turnRunning", "claude-code:A")
    assert read(repo, "src/app.py") == "print('by A, still running')\n"
    # The same turn, its transcript quiet for longer than the quiet period: an abandoned
    # conversation, which no longer holds this one's undo back. (Quiet by the disk's clock:
    # a transcript's mtime moved back by a tool does not make it quiet.)
    old = time.time() - 300
    os.utime(transcript_a, (old, old))
    assert cli(repo, "undo", "--session", "claude-code:B", quiet=60).returncode == EXIT_FAILED
    time.sleep(1.5)
    assert cli_ok(repo, "undo", "--session", "claude-code:B", quiet=1)["turnsUndone"] == 1


def overlapping_turns(repo: Path, outer: str, inner: str, inner_first: bool = False) -> None:
    """Two agents in one tree: `inner`'s turn (src/util.py, "by B") sealed within `outer`'s
    (src/app.py, "by A"); begun before it with `inner_first`."""
    for session in (inner, outer) if inner_first else (outer, inner):
        cli_ok(repo, "capture", "--session", session, "--label", f"{session}'s turn")
    write(repo, "src/util.py", "by B\n")
    cli_ok(repo, "capture", "--session", inner, "--phase", "after")
    write(repo, "src/app.py", "print('by A')\n")
    cli_ok(repo, "capture", "--session", outer, "--phase", "after")


# Proves an undo keeps what another session's turn, sealed while the undone turn ran,
# changed (two agents in one work tree): the whole-tree snapshots made it part of this
# turn, and the undo took that agent's finished work back unseen, out of reach of its
# own session, which still called the turn active.
def test_undo_keeps_what_another_sessions_turn_did_meanwhile(repo: Path):
    overlapping_turns(repo, "mine", "theirs")
    undone = cli_ok(repo, "undo", "--session", "mine")
    assert [f["path"] for f in undone["files"]] == ["src/app.py"]
    assert {"path": "src/util.py", "reason": "otherSession", "by": "theirs"} in undone["kept"]
    assert read(repo, "src/app.py") == "print('v1')\n"
    assert read(repo, "src/util.py") == "by B\n"
    text = (
        cli(repo, "redo", "--session", "mine").stdout
        + cli(repo, "undo", "--session", "mine").stdout
    )
    assert "kept     src/util.py (otherSession: theirs)" in text
    assert cli_ok(repo, "undo", "--session", "theirs")["turnsUndone"] == 1  # still B's to undo
    assert not (repo / "src/util.py").exists()


# Proves which other turns an undo keeps files for, and which it asks about: a turn that
# began before this one and was sealed during it overlapped it only in part, so a change
# made meanwhile may be either agent's: a conflict naming that session (it was kept for the
# other session, once, though this agent had made it; before that, missed and reverted).
# A turn spanning the whole undone turn counts not (its snapshots merely hold this turn's
# change: this session could not undo its own edit, even forced).
def test_which_other_sessions_turns_an_undo_keeps_files_for(repo: Path):
    overlapping_turns(repo, "mine", "theirs", inner_first=True)
    refused = cli(repo, "undo", "--session", "mine", "--json")
    data = json.loads(refused.stdout)["error"]["data"]
    assert (data["reason"], data["files"]) == ("conflict", ["src/util.py"])
    assert "session 'theirs'" in cli(repo, "undo", "--session", "mine").stderr
    forced = cli_ok(repo, "undo", "--session", "mine", "--force")
    assert forced["rescued"] and not (repo / "src/util.py").exists()
    cli_ok(repo, "redo", "--session", "mine")
    assert read(repo, "src/util.py") == "by B\n"

    cli_ok(repo, "capture", "--session", "mine", "--label", "A, around B's next turn")
    cli_ok(repo, "capture", "--session", "theirs", "--label", "B inside")
    write(repo, "src/util.py", "by B, again\n")
    cli_ok(repo, "capture", "--session", "theirs", "--phase", "after")
    cli_ok(repo, "capture", "--session", "mine", "--phase", "after")
    undone = cli_ok(repo, "undo", "--session", "theirs")
    assert [f["path"] for f in undone["files"]] == ["src/util.py"] and undone["kept"] == []
    assert read(repo, "src/util.py") == "by B\n"


# Proves an undo keeps what another session's undo put back while its turn ran: the user
# took back agent A's deletion of their untracked notes during agent B's turn, and the
# undo of B's turn deleted the notes again, then in no snapshot once both captured again.
@pytest.mark.parametrize("sealed", [False, True], ids=["open", "sealed"])
def test_undo_keeps_what_another_sessions_undo_put_back_meanwhile(repo: Path, sealed: bool):
    write(repo, "notes.txt", "my notes, never committed\n")
    cli_ok(repo, "capture", "--session", "A", "--label", "A deletes the notes")
    (repo / "notes.txt").unlink()
    cli_ok(repo, "capture", "--session", "A", "--phase", "after")
    cli_ok(repo, "capture", "--session", "B", "--label", "B works")
    write(repo, "src/b.py", "by B\n")
    cli_ok(repo, "undo", "--session", "A")  # the notes come back
    if sealed:
        cli_ok(repo, "capture", "--session", "B", "--phase", "after")
    undone = cli_ok(repo, "undo", "--session", "B")
    assert [f["path"] for f in undone["files"]] == ["src/b.py"]
    assert {"path": "notes.txt", "reason": "otherSession", "by": "A"} in undone["kept"]
    assert read(repo, "notes.txt") == "my notes, never committed\n"


# Proves a redo leaves alone what another session's undo changed while the redone turn ran,
# once that session has redone it since: the redo took the files back to what its own undo
# had kept for the other session, silently, as the other session's last restore fell
# after the turn and was not looked at.
def test_redo_keeps_what_another_session_redid_since(repo: Path):
    cli_ok(repo, "capture", "--session", "B", "--label", "B")
    write(repo, "fb.txt", "by B\n")
    cli_ok(repo, "capture", "--session", "B", "--phase", "after")
    cli_ok(repo, "capture", "--session", "A", "--label", "A runs")
    write(repo, "fa.txt", "by A\n")
    cli_ok(repo, "undo", "--session", "B", "--force")  # during A's turn
    cli_ok(repo, "capture", "--session", "A", "--phase", "after")
    undone = cli_ok(repo, "undo", "--session", "A")
    assert {"path": "fb.txt", "reason": "otherSession", "by": "B"} in undone["kept"]
    cli_ok(repo, "redo", "--session", "B")
    redone = cli_ok(repo, "redo", "--session", "A")
    assert {"path": "fb.txt", "reason": "otherSession", "by": "B"} in redone["kept"]
    assert read(repo, "fb.txt") == "by B\n" and read(repo, "fa.txt") == "by A\n"


# Proves a redo leaves alone what another session's turn, sealed inside the redone one and
# undone since, had changed: the redo wrote that turn's change back while its own session
# still listed it undone.
def test_redo_does_not_bring_back_another_sessions_undone_turn(repo: Path):
    overlapping_turns(repo, "A", "B")
    cli_ok(repo, "undo", "--session", "A")
    cli_ok(repo, "undo", "--session", "B")
    redone = cli_ok(repo, "redo", "--session", "A")
    assert {"path": "src/util.py", "reason": "otherSession", "by": "B"} in redone["kept"]
    assert read(repo, "src/app.py") == "print('by A')\n"
    assert not (repo / "src/util.py").exists()
    assert cli_ok(repo, "redo", "--session", "B")["turnsRedone"] == 1
    assert read(repo, "src/util.py") == "by B\n"


# Proves an undo is refused while an agent's turn runs in a repository nested in the
# workspace (Codex working from inside api/) or around it: sessions live in the repository
# the hook ran in, the guard read only the workspace's own, and the undo of the root's turn
# reverted the edit the nested agent was still making (then in no turn of its own).
def test_an_agent_running_in_a_nested_repository_refuses_the_undo(repo: Path, tmp_path: Path):
    api = make_repo(repo / "api", {"x.txt": "base\n"})
    transcript_a, transcript_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    claude_hook(repo, "A", "UserPromptSubmit", transcript_a)
    claude_hook(api, "B", "UserPromptSubmit", transcript_b)
    write(api, "x.txt", "B's work in progress\n")
    write(repo, "src/app.py", "print('by A')\n")
    claude_hook(repo, "A", "Stop", transcript_a)
    transcript_b.write_text("{}\n")  # B's conversation goes on

    refused = cli(repo, "undo", "--session", "claude-code:A", "--json")
    assert refused.returncode == EXIT_FAILED, refused.stdout
    data = json.loads(refused.stdout)["error"]["data"]
    assert (data["reason"], data["session"], data["repository"]) == (
        "turnRunning",
        "claude-code:B",
        "api",
    )
    assert read(api, "x.txt") == "B's work in progress\n"
    claude_hook(api, "B", "Stop", transcript_b)
    from_inside = cli(api, "undo", "--session", "claude-code:B")
    assert from_inside.returncode == 0, from_inside.stderr
    claude_hook(repo, "A", "UserPromptSubmit", transcript_a)
    transcript_a.write_text("{}\n")  # A runs at the root now
    refused = cli(api, "redo", "--session", "claude-code:B", "--json")
    assert json.loads(refused.stdout)["error"]["data"]["session"] == "claude-code:A"
