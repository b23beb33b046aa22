"""`turnback hook <harness> <event>` as each harness runs it: a real process fed the
harness's documented JSON on stdin, in a real git repository."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from helpers import (
    SERVER_ENV,
    capture,
    cli_json,
    git_run,
    make_repo,
    read,
    request,
    run_cli,
    tree_state,
    wait_for,
    write,
)

PROMPT = "Rename the helper and drop the old notes\nThen run the tests."
LABEL = "Rename the helper and drop the old notes"


def _claude(root: Path) -> tuple[dict, dict]:
    """Claude Code 2.1.328's UserPromptSubmit and Stop stdin (seen on this machine)."""
    base = {"session_id": "c1f0", "transcript_path": "/t/c1f0.jsonl", "cwd": str(root)}
    return (
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT, "prompt_id": "p-7"},
        {**base, "hook_event_name": "Stop", "stop_hook_active": False},
    )


def _codex(root: Path) -> tuple[dict, dict]:
    """Codex CLI 0.169.0's UserPromptSubmit and Stop stdin (seen on this machine)."""
    base = {
        "session_id": "019a-codex",
        "turn_id": "turn-3",
        "transcript_path": "/t/rollout.jsonl",
        "cwd": str(root),
        "model": "m",
        "permission_mode": "bypassPermissions",
    }
    return (
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT},
        {
            **base,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "ok",
        },
    )


def _gemini(root: Path) -> tuple[dict, dict]:
    """Gemini CLI 0.61.0's BeforeAgent and AfterAgent stdin (seen on this machine)."""
    base = {"session_id": "g-42", "transcript_path": "/t/g.json", "cwd": str(root)}
    stamp = {"timestamp": "2026-11-23T10:00:00.000Z"}
    return (
        {**base, **stamp, "hook_event_name": "BeforeAgent", "prompt": PROMPT},
        {
            **base,
            **stamp,
            "hook_event_name": "AfterAgent",
            "prompt": PROMPT,
            "prompt_response": "done",
            "stop_hook_active": False,
        },
    )


def _opencode(root: Path) -> tuple[dict, dict]:
    """What turnback's own OpenCode plugin sends from chat.message and session.idle."""
    return (
        {"sessionID": "ses_abc", "messageID": "msg_1", "prompt": PROMPT, "cwd": str(root)},
        {"sessionID": "ses_abc", "cwd": str(root)},
    )


def _cursor(root: Path) -> tuple[dict, dict]:
    """Cursor's beforeSubmitPrompt and stop stdin (cursor.com/docs/agent/hooks)."""
    base = {
        "conversation_id": "conv-9",
        "generation_id": "gen-1",
        "model": "m",
        "cursor_version": "2.0.77",
        "workspace_roots": [str(root)],
    }
    return (
        {**base, "hook_event_name": "beforeSubmitPrompt", "prompt": PROMPT, "attachments": []},
        {**base, "hook_event_name": "stop", "status": "completed", "loop_count": 0},
    )


def _cline(root: Path) -> tuple[dict, dict]:
    """Cline's UserPromptSubmit and TaskComplete stdin (docs.cline.bot hook reference)."""
    base = {
        "clineVersion": "3.40.0",
        "timestamp": "1763890000000",
        "taskId": "task-5",
        "workspaceRoots": [str(root)],
        "userId": "u",
    }
    return (
        {**base, "hookName": "UserPromptSubmit", "userPromptSubmit": {"prompt": PROMPT}},
        {
            **base,
            "hookName": "TaskComplete",
            "taskComplete": {"taskMetadata": {"taskId": "task-5", "ulid": "01J"}},
        },
    )


def _windsurf(root: Path) -> tuple[dict, dict]:
    """Windsurf's pre_user_prompt and post_cascade_response stdin (docs.windsurf.com)."""
    base = {
        "trajectory_id": "traj-8",
        "execution_id": "exec-2",
        "timestamp": "2026-11-23T10:00:00Z",
    }
    return (
        {**base, "agent_action_name": "pre_user_prompt", "tool_info": {"user_prompt": PROMPT}},
        {**base, "agent_action_name": "post_cascade_response", "tool_info": {"response": "ok"}},
    )


#: harness -> (events, payloads, session, ids in metadata, stdout before/after when all is well)
CASES: dict[str, tuple] = {
    "claude-code": (
        ("UserPromptSubmit", "Stop"),
        _claude,
        "claude-code:c1f0",
        {"promptId": "p-7", "transcriptPath": "/t/c1f0.jsonl"},
        ("", ""),
    ),
    "codex": (
        ("UserPromptSubmit", "Stop"),
        _codex,
        "codex:019a-codex",
        {"turnId": "turn-3", "transcriptPath": "/t/rollout.jsonl"},
        ("", ""),
    ),
    "gemini": (
        ("BeforeAgent", "AfterAgent"),
        _gemini,
        "gemini:g-42",
        {"transcriptPath": "/t/g.json"},
        ("", ""),
    ),
    "opencode": (
        ("chat.message", "session.idle"),
        _opencode,
        "opencode:ses_abc",
        {"messageId": "msg_1"},
        ("", ""),
    ),
    "cursor": (
        ("beforeSubmitPrompt", "stop"),
        _cursor,
        "cursor:conv-9",
        {"generationId": "gen-1"},
        ('{"continue": true}\n', "{}\n"),
    ),
    "cline": (
        ("UserPromptSubmit", "TaskComplete"),
        _cline,
        "cline:task-5",
        {},
        ('{"cancel": false}\n', '{"cancel": false}\n'),
    ),
    "windsurf": (
        ("pre_user_prompt", "post_cascade_response"),
        _windsurf,
        "windsurf:traj-8",
        {"executionId": "exec-2"},
        ("", ""),
    ),
}


def run_hook(
    root: Path,
    harness: str,
    event: str,
    payload: dict | str,
    *,
    leading: tuple[str, ...] = (),
    preexec_fn: Callable[[], None] | None = None,
    **env: str,
) -> subprocess.CompletedProcess:
    """`turnback [LEADING] hook HARNESS EVENT` in `root` with `payload` on stdin, as a harness
    runs it (`preexec_fn` runs in the hook's process before it starts)."""
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [sys.executable, "-m", "turnback", *leading, "hook", harness, event],
        cwd=root,
        env={**SERVER_ENV, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=preexec_fn,
    )


def agent_edits(root: Path) -> None:
    """What an agent turn does: write, edit, delete and rename files."""
    write(root, "src/new.py", "x = 1\n")
    write(root, "README.md", "hello, agent\n")
    os.remove(root / "src/app.py")
    write(root, "notes.txt", "old notes\n") if not (root / "notes.txt").exists() else None
    os.rename(root / "notes.txt", root / "NOTES.md")


def hook_log(root: Path) -> str:
    path = root / ".git" / "turnback" / "hook.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


# Proves each harness's before/after hooks make exactly one sealed turn in the harness's
# own session, labelled with the prompt's first line, with its ids in the metadata; stdout
# is exactly what the harness expects; undo gives the tree back and names the prompt.
@pytest.mark.parametrize("harness", list(CASES))
def test_hook_before_after_makes_one_sealed_turn(repo: Path, harness: str):
    (before_event, after_event), payloads, session, ids, (out_before, out_after) = CASES[harness]
    before, after = payloads(repo)
    write(repo, "ignored/cache.bin", "keep me\n")
    start = tree_state(repo)

    first = run_hook(repo, harness, before_event, before)
    assert (first.returncode, first.stdout) == (0, out_before), first.stderr
    agent_edits(repo)
    second = run_hook(repo, harness, after_event, after)
    assert (second.returncode, second.stdout) == (0, out_after), second.stderr

    listing = cli_json(repo, "list", "--session", session)
    [turn] = listing["turns"]
    assert (turn["label"], turn["sealed"], turn["state"]) == (LABEL, True, "active")
    expected = {"harness": harness, "cwd": str(repo), "prompt": LABEL, **ids}
    expected["sessionId"] = session.split(":", 1)[1]
    assert turn["metadata"] == expected
    assert hook_log(repo) == ""

    undone = cli_json(repo, "undo", "--session", session)
    assert tree_state(repo) == start
    assert undone["agentHint"]["harness"] == harness
    assert LABEL in undone["agentHint"]["message"]


# Proves two prompts of one conversation make two turns in one session, and undoing both
# gives back the tree as it was before the first.
def test_two_prompts_one_conversation(repo: Path):
    before, after = _claude(repo)
    start = tree_state(repo)
    for prompt, change in (("first prompt", "one\n"), ("second prompt", "two\n")):
        run_hook(repo, "claude", "UserPromptSubmit", {**before, "prompt": prompt})
        write(repo, "src/app.py", change)
        run_hook(repo, "claude", "Stop", after)
    turns = cli_json(repo, "list", "--session", "claude-code:c1f0")["turns"]
    assert [(t["label"], t["sealed"]) for t in turns] == [
        ("second prompt", True),
        ("first prompt", True),
    ]
    cli_json(repo, "undo", "-n", "2", "--session", "claude-code:c1f0")
    assert tree_state(repo) == start


# Proves the "after" hook seals the prompt's own turn when the agent moved between the
# repository and a nested one since the "before" hook (its Stop fires where it stands): it
# found the nearest note, an older prompt's, and sealed that turn with this one's changes,
# leaving this one "running".
# With the clock stepped back an hour between the prompts (NTP, a VM resumed), the order
# still holds: notes are numbered, not told apart by their times.
@pytest.mark.parametrize("clock", ["", "-3600"], ids=["", "clock-set-back"])
@pytest.mark.parametrize("moves", ["into-nested", "out-of-nested"])
def test_after_hook_in_another_repository_seals_the_prompts_turn(
    repo: Path, tmp_path: Path, moves: str, clock: str
):
    api = make_repo(repo / "api", {"x.txt": "base\n"})
    before, after = _claude(repo)
    first, then = (repo, api) if moves == "into-nested" else (api, repo)
    skew = tmp_path / "skew"
    skew.mkdir()
    (skew / "sitecustomize.py").write_text(_SKEW)

    def prompt(where: Path, stop_in: Path, text: str, seconds: str = "") -> None:
        payload = {**before, "cwd": str(where), "prompt": text}
        run_hook(where, "claude", "UserPromptSubmit", payload, PYTHONPATH=str(skew), SKEW=seconds)
        write(repo, "src/app.py", f"{text}\n")
        write(api, "x.txt", f"{text}\n")
        run_hook(stop_in, "claude", "Stop", {**after, "cwd": str(stop_in)}, PYTHONPATH=str(skew))

    prompt(then, then, "earlier prompt")  # an older note where the next Stop fires
    prompt(first, then, "this prompt", clock)
    turns = cli_json(first, "list", "--session", "claude-code:c1f0")["turns"]
    assert (turns[0]["label"], turns[0]["sealed"]) == ("this prompt", True)
    older = cli_json(then, "list", "--session", "claude-code:c1f0")["turns"]
    assert [t["label"] for t in older] == ["earlier prompt"]
    diffs = [f["diff"] for f in cli_json(then, "diff", "--session", "claude-code:c1f0")["files"]]
    assert diffs and all("this prompt" not in text for text in diffs)


#: A clock moved by $SKEW seconds, for the hook processes of a test.
_SKEW = """
import os, time
_shift = float(os.environ.get("SKEW") or 0)
if _shift:
    _ns, _now = time.time_ns, time.time
    time.time_ns = lambda: _ns() + int(_shift * 1e9)
    time.time = lambda: _now() + _shift
"""


# Proves the hooks of one Codex turn run twice (installed for the user and the project:
# Codex runs both) open one turn, not an "interrupted" one beside each real one, and the
# next prompt (a new turn id) opens the next.
def test_the_same_harness_turn_opens_one_turn(repo: Path):
    before, after = _codex(repo)
    for turn_id, change in (("turn-3", "one\n"), ("turn-4", "two\n")):
        for _ in range(2):
            assert (
                run_hook(
                    repo, "codex", "UserPromptSubmit", {**before, "turn_id": turn_id}
                ).returncode
                == 0
            )
        write(repo, "src/app.py", change)
        for _ in range(2):
            run_hook(repo, "codex", "Stop", {**after, "turn_id": turn_id})
    turns = cli_json(repo, "list", "--session", "codex:019a-codex")["turns"]
    assert [(t["turn"], t["progress"]) for t in turns] == [(2, "sealed"), (1, "sealed")]


# Proves a background subagent's work in Claude Code belongs to the user's prompt: Claude
# Code fires Stop when the main reply ends, the subagent writes on, then a UserPromptSubmit
# carrying its <task-notification> starts the reply to it. That opened a turn of its own,
# labelled with the notification, and the subagent's files fell between the two turns, in
# neither: `turnback undo` took back nothing and left them (recorded 2.1.328 payloads).
def test_a_subagent_report_continues_the_prompts_turn(repo: Path):
    before, after = _claude(repo)
    run_hook(repo, "claude-code", "UserPromptSubmit", before)
    write(repo, "src/app.py", "the parent's work\n")
    run_hook(repo, "claude-code", "Stop", after)
    write(repo, "child.txt", "the subagent's work\n")
    report = {**before, "prompt_id": "p-8", "prompt": "<task-notification>\n<task-id>a1"}
    run_hook(repo, "claude-code", "UserPromptSubmit", report)
    write(repo, "summary.md", "the reply to the report\n")
    run_hook(repo, "claude-code", "Stop", after)
    [turn] = cli_json(repo, "list", "--session", "claude-code:c1f0")["turns"]
    assert (turn["label"], turn["progress"]) == (LABEL, "sealed")
    undone = cli_json(repo, "undo", "--session", "claude-code:c1f0")
    assert sorted(f["path"] for f in undone["files"]) == ["child.txt", "src/app.py", "summary.md"]


# Proves OpenCode's hooks installed for the project and for the user (OpenCode runs both
# plugins) open one turn per prompt, by its message id, as Codex's do by turn id.
def test_opencode_installed_twice_opens_one_turn_per_prompt(repo: Path):
    before, after = _opencode(repo)
    for message, change in (("msg-1", "one\n"), ("msg-2", "two\n")):
        for _ in range(2):
            run_hook(repo, "opencode", "chat.message", {**before, "messageID": message})
        write(repo, "src/app.py", change)
        for _ in range(2):
            run_hook(repo, "opencode", "session.idle", after)
    turns = cli_json(repo, "list", "--session", "opencode:ses_abc")["turns"]
    assert [(t["turn"], t["progress"]) for t in turns] == [(2, "sealed"), (1, "sealed")]


def _break_storage(root: Path) -> None:
    """The repository lock path becomes a directory: every capture fails (even as root)."""
    lock = root / ".git" / "turnback" / "lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    if lock.exists():
        lock.unlink()
    (lock / "in-the-way").mkdir(parents=True)


#: harness -> what its "after" hook prints when the turn could not be recorded
_WARN_AFTER: dict[str, Callable[[str], bool]] = {
    "claude-code": lambda out: "turnback" in json.loads(out)["systemMessage"],
    "codex": lambda out: "turnback" in json.loads(out)["systemMessage"],
    "gemini": lambda out: "turnback" in json.loads(out)["systemMessage"],
}


# Proves a hook never blocks the agent when storage is broken: exit 0, stdout still what
# the harness expects (before: never anything the model would see), the error in the log,
# and a one-line warning only where the harness shows it to the user alone.
@pytest.mark.parametrize("harness", list(CASES))
def test_broken_storage_never_blocks(repo: Path, harness: str):
    (before_event, after_event), payloads, _session, _ids, (out_before, out_after) = CASES[harness]
    before, after = payloads(repo)
    _break_storage(repo)
    first = run_hook(repo, harness, before_event, before)
    assert first.returncode == 0
    if harness == "gemini":  # its systemMessage goes to the user, never the model
        assert "could not snapshot" in json.loads(first.stdout)["systemMessage"]
    else:
        assert first.stdout == out_before
    assert "before:" in hook_log(repo)
    second = run_hook(repo, harness, after_event, after)
    assert second.returncode == 0
    check = _WARN_AFTER.get(harness)
    if check is not None:
        assert second.stdout.count("\n") == 1 and check(second.stdout)
    else:
        assert second.stdout == out_after


# Proves an "after" hook with no turn opened by a "before" hook does nothing (no turn, no
# error), and that an unknown event or garbage on stdin still exits 0 and is logged.
def test_after_without_before_and_bad_input(repo: Path):
    _, after = _claude(repo)
    done = run_hook(repo, "claude-code", "Stop", after)
    assert (done.returncode, done.stdout) == (0, "")
    assert cli_json(repo, "list")["turns"] == []
    garbage = run_hook(repo, "claude-code", "UserPromptSubmit", "{not json")
    assert (garbage.returncode, garbage.stdout) == (0, "")
    assert "no session id" in hook_log(repo) or "not a JSON object" in hook_log(repo)
    unknown = run_hook(repo, "no-such-agent", "Stop", after)
    assert (unknown.returncode, unknown.stdout) == (0, "")
    assert "unknown harness" in hook_log(repo)
    deep = '{"x": ' + "[" * 100_000 + "]" * 100_000 + "}"  # nested past Python's stack
    done = run_hook(repo, "claude-code", "Stop", deep)
    assert done.returncode == 0 and "stdin is not a JSON object" in done.stdout
    assert "internal error" not in hook_log(repo)


# Proves a hook exits 0 with nothing on stderr but one line, however its process is set
# up: its working folder deleted (with no cwd in the payload, or for an unknown event),
# or an infinite TURNBACK_HOOK_TIMEOUT (a thread join refuses it).
def test_hook_exits_0_from_a_deleted_folder_or_an_infinite_timeout(repo: Path, tmp_path: Path):
    gone = tmp_path / "gone"
    gone.mkdir()
    for harness, event in (("claude-code", "Stop"), ("gemini", "BeforeAgent"), ("x", "y")):
        done = subprocess.run(
            [sys.executable, "-m", "turnback", "hook", harness, event],
            cwd=gone,
            env={**SERVER_ENV, "XDG_STATE_HOME": str(tmp_path / "state")},
            input=json.dumps({"session_id": "s", "prompt": "hi"}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            preexec_fn=lambda: os.rmdir(gone),
        )
        gone.mkdir()
        assert done.returncode == 0, (harness, done.stderr)
        assert "Traceback" not in done.stderr and done.stderr.count("\n") <= 1, done.stderr
    before, _after = _claude(repo)
    done = run_hook(repo, "gemini", "BeforeAgent", before, TURNBACK_HOOK_TIMEOUT="inf")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


# Proves a prompt cut inside an emoji (a lone surrogate in the JSON) still makes its turn,
# labelled with U+FFFD where the half character was.
def test_prompt_with_half_an_emoji_makes_its_turn(repo: Path):
    before, after = _claude(repo)
    fields = {k: v for k, v in before.items() if k != "prompt"}
    payload = json.dumps({**fields, "prompt": "fix the bug "})[:-2] + '\\ud83d"}'
    assert run_hook(repo, "claude-code", "UserPromptSubmit", payload).returncode == 0
    write(repo, "src/app.py", "fixed\n")
    done = run_hook(repo, "claude-code", "Stop", after)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout
    [turn] = cli_json(repo, "list", "--session", "claude-code:c1f0")["turns"]
    assert turn["sealed"] and turn["label"].startswith("fix the bug \ufffd")


# Proves a project folder whose name is not UTF-8 gets its turns through hooks, whether the
# agent sends the folder with U+FFFD (a Node agent) or with an escaped byte: the folder was
# copied into the turn's metadata, which refused it, and every turn went unrecorded.
@pytest.mark.parametrize("spelling", ["replaced", "escaped"])
def test_hooks_in_a_folder_whose_name_is_not_utf8(tmp_path: Path, spelling: str):
    root = make_repo(Path(os.fsdecode(os.fsencode(tmp_path) + b"/proj\xff")), {"a.txt": "a\n"})
    sent = os.fsencode(root).decode("utf-8", "replace") if spelling == "replaced" else str(root)
    before, after = ({**payload, "cwd": sent} for payload in _claude(root))
    assert run_hook(root, "claude-code", "UserPromptSubmit", before).returncode == 0
    write(root, "a.txt", "agent\n")
    assert run_hook(root, "claude-code", "Stop", after).returncode == 0
    assert hook_log(root) == ""
    [turn] = cli_json(root, "list", "--session", "claude-code:c1f0")["turns"]
    assert turn["sealed"] and turn["metadata"]["cwd"].endswith("proj\ufffd")
    cli_json(root, "undo", "--session", "claude-code:c1f0")
    assert read(root, "a.txt") == "a\n"


# Proves `turnback -C DIR hook ...` (-C first, as every command takes it) runs the hook and
# exits 0: it was an internal error, exit 3, which an agent may take for a blocking hook.
def test_hook_after_a_leading_folder_option(repo: Path, tmp_path: Path):
    before, _after = _claude(repo)
    leading = ("-C", str(repo))
    done = run_hook(tmp_path, "claude-code", "UserPromptSubmit", before, leading=leading)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert len(cli_json(repo, "list", "--session", "claude-code:c1f0")["turns"]) == 1


# Proves that when the hook cannot write under `.git/turnback` (the very reason its capture
# failed), the "after" hook still finds the failure and tells the user, instead of the
# turn being lost without a word.
def test_unwritable_state_folder_still_warns_after_the_turn(repo: Path, tmp_path: Path):
    (repo / ".git" / "turnback").mkdir(exist_ok=True)
    (repo / ".git" / "turnback" / "hooks").write_text("a file where the notes go\n")
    _break_storage(repo)
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    before, after = _claude(repo)
    assert run_hook(repo, "claude-code", "UserPromptSubmit", before, **state).returncode == 0
    done = run_hook(repo, "claude-code", "Stop", after, **state)
    assert done.returncode == 0
    assert "did not record this turn" in json.loads(done.stdout)["systemMessage"]


# Proves a "before" hook that can write nothing (a full disk: here a file-size limit of 0)
# leaves no note of the previous prompt behind: the "after" hook found that note and
# sealed the previous turn again with this prompt's changes, without a word.
def test_before_hook_that_can_write_nothing_leaves_no_older_note(repo: Path):
    before, after = _claude(repo)
    run_hook(repo, "claude-code", "UserPromptSubmit", {**before, "prompt": "first"})
    write(repo, "src/app.py", "first prompt\n")
    run_hook(repo, "claude-code", "Stop", after)
    write(repo, "notes.txt", "x" * 3000)  # the second capture has something to store
    no_writes = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))  # noqa: E731
    second = {**before, "prompt": "second"}
    full = run_hook(repo, "claude-code", "UserPromptSubmit", second, preexec_fn=no_writes)
    assert full.returncode == 0
    write(repo, "src/app.py", "second prompt\n")
    run_hook(repo, "claude-code", "Stop", after)
    [turn] = cli_json(repo, "list", "--session", "claude-code:c1f0")["turns"]
    assert turn["label"] == "first"
    diff = run_cli(repo, "diff", "1", "--session", "claude-code:c1f0").stdout
    assert "+first prompt" in diff and "second prompt" not in diff


# Proves a hook stays within its deadline while another process holds the repository
# lock, exits 0, logs it, and the "after" hook then seals nothing (the turn was not
# recorded) instead of sealing an older turn.
def test_hook_deadline_with_lock_held(repo: Path):
    before, after = _claude(repo)
    run_hook(repo, "claude-code", "UserPromptSubmit", {**before, "prompt": "older"})
    run_hook(repo, "claude-code", "Stop", after)
    lock_path = repo / ".git" / "turnback" / "lock"
    with open(lock_path, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = run_hook(repo, "claude-code", "UserPromptSubmit", before, TURNBACK_HOOK_TIMEOUT="1")
    assert (done.returncode, done.stdout) == (0, "")
    assert "gave up after 1 s" in hook_log(repo)
    write(repo, "src/app.py", "changed after the older turn was sealed\n")
    done = run_hook(repo, "claude-code", "Stop", after)
    assert done.returncode == 0 and "did not record" in json.loads(done.stdout)["systemMessage"]
    [older] = cli_json(repo, "list", "--session", "claude-code:c1f0")["turns"]
    diff = cli_json(repo, "diff", "--session", "claude-code:c1f0")
    assert older["label"] == "older" and diff["files"] == []  # its seal was not moved


# Proves a "before" hook the agent stops at its own timeout (SIGTERM) says so in the log
# the "after" hook's warning names, and exits 0 at once: it died without a word, and the
# warning pointed at a log with nothing about this turn.
def test_hook_stopped_by_the_agent_says_so(repo: Path):
    before, after = _claude(repo)
    (repo / ".git" / "turnback").mkdir(exist_ok=True)
    with open(repo / ".git" / "turnback" / "lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the capture waits for the repository meanwhile
        hook = subprocess.Popen(
            [sys.executable, "-m", "turnback", "hook", "claude-code", "UserPromptSubmit"],
            cwd=repo,
            env=SERVER_ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        hook.stdin.write(json.dumps(before))
        hook.stdin.close()
        wait_for(lambda: _capturing(hook.pid), what="the hook's capture")
        hook.send_signal(signal.SIGTERM)
        assert hook.wait(timeout=30) == 0 and hook.stdout.read() == ""
    assert "UserPromptSubmit: stopped by SIGTERM before it finished" in hook_log(repo)
    done = run_hook(repo, "claude-code", "Stop", after)
    assert "did not record" in json.loads(done.stdout)["systemMessage"]


def _capturing(pid: int) -> bool:
    """Whether the hook `pid` has begun its capture: libgit2 is loaded then, not before."""
    try:
        return "libgit2" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


# Proves the hook path imports neither pygit2 nor the engine until it captures (here a
# Stop with no open turn, which needs no capture).
def test_hook_is_import_light(repo: Path):
    code = (
        "import sys, io\n"
        "from turnback.cli import main\n"
        'sys.stdin = io.TextIOWrapper(io.BytesIO(b\'{"session_id": "s"}\'))\n'
        "main(['hook', 'claude-code', 'Stop'])\n"
        "print(sorted(m for m in ('pygit2', 'turnback.engine') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, env=SERVER_ENV, capture_output=True, text=True
    )
    assert done.stdout.strip() == "[]", done.stderr


# Proves a hook in a linked worktree logs under that worktree's own git directory.
def test_hook_log_in_linked_worktree(repo: Path, tmp_path: Path):
    other = tmp_path / "wt"
    assert git_run(repo, "worktree", "add", "-q", str(other)).returncode == 0
    run_hook(other, "claude-code", "UserPromptSubmit", "[]")
    log = repo / ".git" / "worktrees" / "wt" / "turnback" / "hook.log"
    assert "not a JSON object" in log.read_text(encoding="utf-8")
    assert read(other, "README.md") == "hello\n"


# Proves a Stop after the user undid the hook's turn mid-turn seals nothing: the older,
# already sealed turn keeps its own end state instead of taking the agent's later edits.
def test_after_does_not_seal_an_older_turn(repo: Path):
    before, after = _claude(repo)
    run_hook(repo, "claude-code", "UserPromptSubmit", {**before, "prompt": "older"})
    write(repo, "src/app.py", "older turn's edit\n")
    run_hook(repo, "claude-code", "Stop", after)
    run_hook(repo, "claude-code", "UserPromptSubmit", {**before, "prompt": "newer"})
    # The user undoes it mid-turn (a running turn: only with force, issue 15).
    cli_json(repo, "undo", "--force", "--session", "claude-code:c1f0")
    write(repo, "README.md", "the agent keeps writing\n")
    done = run_hook(repo, "claude-code", "Stop", after)
    assert (done.returncode, done.stdout) == (0, "")
    diff = cli_json(repo, "diff", "1", "--session", "claude-code:c1f0")
    assert [f["path"] for f in diff["files"]] == ["src/app.py"]


# Proves snapshot/capture's `turn` on the wire: an "after" naming the newest active turn
# seals it; naming another turn fails with noOpenTurn and records nothing.
async def test_capture_after_with_turn(client, repo: Path):
    first = await capture(client, label="one")
    second = await capture(client, label="two")
    with pytest.raises(JsonRpcException) as info:
        await request(client, "snapshot/capture", {"phase": "after", "turn": first["id"]})
    assert info.value.data["reason"] == "noOpenTurn"
    sealed = await request(client, "snapshot/capture", {"phase": "after", "turn": 2})
    assert (sealed["id"], sealed["sealed"]) == (second["id"], True)


# Proves every root of a multi-root workspace is part of the prompt's turn: each root's
# work tree gets one sealed turn in the conversation's session (a plain folder too, though
# plain folders keep their hook notes in one shared folder), a root inside another root's
# work tree is captured with it, and undoing in each root gives every root back.
@pytest.mark.parametrize("harness", ["cursor", "cline"])
def test_every_root_of_a_multi_root_workspace_is_captured(tmp_path: Path, harness: str):
    first = make_repo(tmp_path / "first")
    second = make_repo(tmp_path / "second")
    plain = tmp_path / "plain"
    write(plain, "notes.md", "plain notes\n")
    other_plain = tmp_path / "other-plain"
    write(other_plain, "todo.md", "plain todo\n")
    inside = first / "src"
    key = "workspace_roots" if harness == "cursor" else "workspaceRoots"
    roots = [str(first), str(inside), str(second), str(plain), str(other_plain)]
    (before_event, after_event), payloads, session, _ids, _out = CASES[harness]
    before, after = ({**payload, key: roots} for payload in payloads(first))
    starts = {root: tree_state(root) for root in (first, second, plain, other_plain)}

    assert run_hook(first, harness, before_event, before).returncode == 0
    for root, rel in ((first, "src/app.py"), (second, "README.md"), (plain, "notes.md")):
        write(root, rel, "the agent's\n")
    write(other_plain, "new.md", "the agent's\n")
    assert run_hook(first, harness, after_event, after).returncode == 0

    for root in (first, second, plain, other_plain):
        [turn] = cli_json(root, "list", "--session", session)["turns"]
        assert (turn["label"], turn["sealed"]) == (LABEL, True), root
        assert turn["metadata"]["cwd"] == str(root)
        cli_json(root, "undo", "--session", session)
        assert tree_state(root) == starts[root], root


# Proves a turn recorded after its "before" hook gave up at the deadline (the daemon's
# capture was already under way and went on) is sealed by the prompt's Stop, as that
# prompt's turn: the hook said "not recorded", and the Stop then said so again and left
# the turn unsealed, "running", for good. (The repository lock, held meanwhile, makes the
# hook give up every time; the late capture is then recorded as the daemon would.)
def test_a_turn_recorded_after_its_hook_gave_up_is_sealed(repo: Path):
    before, after = _claude(repo)
    cli_json(repo, "list")  # turnback's state folder, with its lock file
    with open(repo / ".git" / "turnback" / "lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        timed_out = run_hook(
            repo, "claude-code", "UserPromptSubmit", before, TURNBACK_HOOK_TIMEOUT="0.1"
        )
    assert timed_out.returncode == 0 and "gave up" in hook_log(repo)
    assert cli_json(repo, "list", "--session", "claude-code:c1f0")["turns"] == []
    # What the daemon still holding that capture then records:
    cli_json(repo, "capture", "--session", "claude-code:c1f0", "--label", LABEL)
    write(repo, "README.md", "the agent's\n")
    done = run_hook(repo, "claude-code", "Stop", after)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout
    [turn] = cli_json(repo, "list", "--session", "claude-code:c1f0")["turns"]
    assert turn["sealed"] is True
