"""The LSP lifecycle as the specification says, spoken raw to the real server process.

pytest-lsp always initializes first and shuts down properly, so these tests write the
frames themselves (reliability_support.RawServer) to send what a broken client would.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))
from reliability_support import RawServer  # noqa: E402

from helpers import cli_json, git, read, write  # noqa: E402

SERVER_NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def _initialize_params(root: Path) -> dict:
    return {
        "processId": None,
        "rootUri": root.as_uri(),
        "capabilities": {},
        "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
    }


@pytest.fixture
def raw(repo: Path):
    """A server that has not been sent anything yet."""
    server = RawServer(repo, initialize=False)
    yield server
    if server.alive():
        server.proc.kill()
        server.proc.wait(10)


# Ensures a request before `initialize` gets -32002 (no internal error, no traceback), a
# notification is dropped, and `initialize` then works.
def test_request_before_initialize_is_server_not_initialized(raw: RawServer, repo: Path):
    for method in ("snapshot/list", "textDocument/codeLens", "shutdown"):
        answer = raw.request(method, {}, timeout=30)
        assert answer["error"]["code"] == SERVER_NOT_INITIALIZED, answer
        assert "not initialized" in answer["error"]["message"]
        assert "Traceback" not in str(answer)
    raw.notify("snapshot/didChange", {})  # dropped: no answer, no crash
    answer = raw.request("initialize", _initialize_params(repo), timeout=60)
    assert "capabilities" in answer["result"]
    raw.notify("initialized", {})
    assert "turns" in raw.request("snapshot/list", {})["result"]


# Ensures every request gets an answer (found by a helper's audit of protocol.md): a
# notification's method sent with an id is InvalidRequest (pygls ran it and dropped the id:
# the client waited forever); an integer past Python's 4,300 digits is InvalidParams for
# its request (it was a ParseError with id null); and a custom method sent without an id
# is not run (a capture recorded a turn nobody was told of).
def test_every_request_is_answered_and_custom_notifications_do_nothing(raw: RawServer, repo: Path):
    assert "result" in raw.request("initialize", _initialize_params(repo), timeout=60)
    document = {"textDocument": {"uri": (repo / "README.md").as_uri()}}
    for method, params in (
        ("initialized", {}),
        ("textDocument/didClose", document),
        ("$/setTrace", {"value": "off"}),
    ):
        answer = raw.request(method, params, timeout=30)
        assert answer["error"]["code"] == INVALID_REQUEST, answer
        assert "notification" in answer["error"]["message"]
    msg_id = raw.next_id()
    raw.send(
        raw.frame(
            b'{"jsonrpc": "2.0", "id": %d, "method": "snapshot/list", "params": {"limit": %s}}'
            % (msg_id, b"9" * 5000)
        )
    )
    answer = raw.wait_response(msg_id, 30)
    assert answer is not None and answer["error"]["code"] == INVALID_PARAMS, answer
    assert answer["error"]["data"] == {"field": "limit"}
    raw.notify("snapshot/capture", {"label": "sent as a notification"})
    assert raw.request("snapshot/list", {})["result"]["turns"] == []


# Ensures a second `initialize` is refused (InvalidRequest), not answered again, and the
# server keeps serving the first session.
def test_second_initialize_is_refused(raw: RawServer, repo: Path):
    assert "result" in raw.request("initialize", _initialize_params(repo), timeout=60)
    raw.notify("initialized", {})
    again = raw.request("initialize", _initialize_params(repo), timeout=30)
    assert "result" not in again
    assert again["error"]["code"] == INVALID_REQUEST
    assert "already initialized" in again["error"]["message"]
    assert "turns" in raw.request("snapshot/list", {})["result"]


# Ensures requests after `shutdown` get -32600 InvalidRequest (not silence), and `exit`
# then ends the process with code 0.
def test_requests_after_shutdown_are_invalid_and_exit_is_0(raw: RawServer, repo: Path):
    assert "result" in raw.request("initialize", _initialize_params(repo), timeout=60)
    raw.notify("initialized", {})
    assert raw.request("shutdown", None)["result"] is None
    for method in ("snapshot/list", "snapshot/capture", "shutdown"):
        answer = raw.request(method, {}, timeout=15)  # TimeoutError when unanswered
        assert answer["error"]["code"] == INVALID_REQUEST, answer
        assert "shutting down" in answer["error"]["message"]
    raw.notify("exit", None)
    assert raw.proc.wait(15) == 0


# Ensures `exit` without `shutdown` ends the server with exit code 1, initialized or not.
@pytest.mark.parametrize("initialized", [True, False], ids=["initialized", "never-initialized"])
def test_exit_without_shutdown_exits_1(raw: RawServer, repo: Path, initialized: bool):
    if initialized:
        assert "result" in raw.request("initialize", _initialize_params(repo), timeout=60)
        raw.notify("initialized", {})
    raw.notify("exit", None)
    assert raw.proc.wait(15) == 1


# Ensures a client that sends `exit` right behind `shutdown`, without waiting for its answer
# (while the shutdown handler still closes the engines), still gets exit code 0.
def test_exit_right_behind_shutdown_exits_0(raw: RawServer, repo: Path):
    assert "result" in raw.request("initialize", _initialize_params(repo), timeout=60)
    raw.notify("initialized", {})
    raw.write({"jsonrpc": "2.0", "id": raw.next_id(), "method": "shutdown"})
    raw.notify("exit", None)
    assert raw.proc.wait(15) == 0


# Ensures `shutdown` arriving while an undo runs lets the undo finish and answers it with
# its result: pygls's shutdown cancelled it, so the client heard "canceled" for an undo
# that was then done.
def test_shutdown_lets_an_undo_under_way_answer(repo: Path):
    for n in range(1500):
        write(repo, f"many/f{n}.txt", f"v1 {n}\n")
    git(repo, "add", "many")
    git(repo, "commit", "-q", "-m", "many files")
    cli_json(repo, "capture", "--label", "turn")
    for n in range(1500):
        write(repo, f"many/f{n}.txt", f"agent {n}\n")
    cli_json(repo, "capture", "--phase", "after")
    raw = RawServer(repo)
    try:
        undo, shutdown = raw.next_id(), raw.next_id()
        raw.write({"jsonrpc": "2.0", "id": undo, "method": "snapshot/undo", "params": {}})
        raw.write({"jsonrpc": "2.0", "id": shutdown, "method": "shutdown"})
        assert (raw.wait_response(shutdown, 60) or {}).get("result", "none") is None
        answer = raw.wait_response(undo, 5)
        assert answer is not None and answer["result"]["turnsUndone"] == 1, answer
        raw.notify("exit", None)
        assert raw.proc.wait(15) == 0
    finally:
        if raw.alive():
            raw.proc.kill()
    assert read(repo, "many/f0.txt") == "v1 0\n"


# Ensures `shutdown` while a "Revert hunk" waits for the client's answer to its
# workspace/applyEdit (a client shutting down will not answer it) answers null at once,
# not an internal error with a traceback ("dictionary changed size during iteration").
def test_shutdown_with_an_unanswered_apply_edit(repo: Path):
    write(repo, "src/app.py", "one\ntwo\n")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "src/app.py", "one\nagent\n")
    raw = RawServer(repo, capabilities={"workspace": {"applyEdit": True}})
    raw.unanswered.add("workspace/applyEdit")
    try:
        uri = (repo / "src/app.py").as_uri()
        document = {"uri": uri, "languageId": "python", "version": 1, "text": "one\nagent\n"}
        raw.notify("textDocument/didOpen", {"textDocument": document})
        [lens] = [
            lens
            for lens in raw.request("textDocument/codeLens", {"textDocument": {"uri": uri}})[
                "result"
            ]
            if lens["command"]["title"] == "Revert hunk"
        ]
        revert = raw.next_id()
        command = {"command": lens["command"]["command"], "arguments": lens["command"]["arguments"]}
        raw.write(
            {
                "jsonrpc": "2.0",
                "id": revert,
                "method": "workspace/executeCommand",
                "params": command,
            }
        )
        deadline = time.monotonic() + 15
        while not any(m.get("method") == "workspace/applyEdit" for m in list(raw.received)):
            assert time.monotonic() < deadline, "no workspace/applyEdit"
            time.sleep(0.05)
        answer = raw.request("shutdown", None, timeout=10)
        assert "result" in answer and answer["result"] is None, answer
        assert "error" in (raw.wait_response(revert, 5) or {"error": "none"})
        raw.notify("exit", None)
        assert raw.proc.wait(15) == 0
    finally:
        if raw.alive():
            raw.proc.kill()


def _revert_hunk_lens(raw: RawServer, repo: Path) -> dict:
    """src/app.py ("one\nagent\n") opened, and its "Revert hunk" lens's command."""
    uri = (repo / "src/app.py").as_uri()
    document = {"uri": uri, "languageId": "python", "version": 1, "text": "one\nagent\n"}
    raw.notify("textDocument/didOpen", {"textDocument": document})
    lenses = raw.request("textDocument/codeLens", {"textDocument": {"uri": uri}})["result"]
    [lens] = [lens for lens in lenses if lens["command"]["title"] == "Revert hunk"]
    return {"command": lens["command"]["command"], "arguments": lens["command"]["arguments"]}


# Ensures a client that answers workspace/applyEdit and workspace/configuration with `null`
# (not what LSP says) gets "Revert hunk" answered, not a command that waits forever: pygls
# never settles a reply it cannot read. (RawServer answers every server request null.)
def test_revert_hunk_answered_when_the_editor_answers_null(repo: Path):
    write(repo, "src/app.py", "one\ntwo\n")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "src/app.py", "one\nagent\n")
    caps = {"workspace": {"applyEdit": True, "configuration": True}}
    raw = RawServer(repo, capabilities=caps)
    try:
        command = _revert_hunk_lens(raw, repo)
        answer = raw.request("workspace/executeCommand", command, timeout=30)
        assert answer["result"] == {
            "applied": False,
            "message": "The editor gave no answer to the edit it could read",
        }, answer
    finally:
        if raw.alive():
            raw.proc.kill()


# Ensures an editor that answers workspace/applyEdit with an error makes "Revert hunk" answer
# `applied: false` with the editor's words: the command passed the editor's error on as its
# own (-32601 "Unhandled method" from the server, or -32603, which protocol.md keeps for bugs).
@pytest.mark.parametrize("code", [-32601, -32603])
def test_revert_hunk_when_the_editor_answers_an_error(repo: Path, code: int):
    write(repo, "src/app.py", "one\ntwo\n")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "src/app.py", "one\nagent\n")
    raw = RawServer(repo, capabilities={"workspace": {"applyEdit": True}})
    raw.refused["workspace/applyEdit"] = {"code": code, "message": "the editor failed"}
    try:
        command = _revert_hunk_lens(raw, repo)
        answer = raw.request("workspace/executeCommand", command, timeout=30)
        assert answer.get("result") == {
            "applied": False,
            "message": "The editor refused the edit: the editor failed",
        }, answer
    finally:
        if raw.alive():
            raw.proc.kill()


# Ensures "Revert hunk" for a client that does not take workspace edits answers at once that
# it cannot, instead of sending workspace/applyEdit anyway (a client that never answers it
# hung the command; one that answers MethodNotFound passed the error on).
def test_revert_hunk_without_apply_edit(repo: Path):
    write(repo, "src/app.py", "one\ntwo\n")
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "src/app.py", "one\nagent\n")
    raw = RawServer(repo)  # no workspace.applyEdit capability
    raw.unanswered.add("workspace/applyEdit")
    try:
        command = _revert_hunk_lens(raw, repo)
        answer = raw.request("workspace/executeCommand", command, timeout=10)
        assert answer["result"]["applied"] is False, answer
        assert not any(m.get("method") == "workspace/applyEdit" for m in list(raw.received))
        outside = {**command["arguments"][0], "uri": "file:///etc/passwd"}
        refused = raw.request("workspace/executeCommand", {**command, "arguments": [outside]})
        assert refused["error"]["data"]["field"] == "uri", refused
    finally:
        if raw.alive():
            raw.proc.kill()


# Ensures `exit` while a capture still runs ends the process quietly, with the exit code
# the specification gives, alone or right behind `shutdown` (a client stops waiting for a
# slow shutdown): the capture's cancelled answer to the closed stdout failed, its error
# report failed the same way, and so on, megabytes of stderr a second, and some processes
# never ended.
@pytest.mark.parametrize("after_shutdown", [False, True], ids=["exit-alone", "shutdown-exit"])
def test_exit_while_a_capture_runs_ends_the_process(tmp_path: Path, after_shutdown: bool):
    folder = tmp_path / "plain"  # a plain folder's first capture: about a second
    for d in range(60):
        (folder / f"d{d}").mkdir(parents=True)
        for n in range(250):
            (folder / f"d{d}" / f"f{n}.txt").write_text(f"{d} {n}\n")
    raw = RawServer(folder)
    try:
        time.sleep(1.0)
        raw.write({"jsonrpc": "2.0", "id": raw.next_id(), "method": "snapshot/capture"})
        time.sleep(0.3)
        if after_shutdown:
            raw.write({"jsonrpc": "2.0", "id": raw.next_id(), "method": "shutdown"})
        raw.notify("exit", None)
        assert raw.proc.wait(30) == (0 if after_shutdown else 1)
        time.sleep(0.2)  # the last of stderr
        assert not [line for line in raw.stderr_tail if b"I/O operation on closed" in line]
    finally:
        if raw.alive():
            raw.proc.kill()


# Ensures an undo under way when `shutdown` and `exit` arrive right behind it (a client
# closing the editor just after asking) is carried out whole, and the process ends with
# code 0 and no traceback: the undo's handler was cancelled before it began, and asyncio
# printed the cancelled request's and the escaping SystemExit's tracebacks.
def test_exit_right_behind_an_undo_lets_it_finish_quietly(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for n in range(300):
        (repo / f"f{n}.txt").write_text("v\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    raw = RawServer(repo)
    try:
        assert raw.request("snapshot/capture", {"label": "turn"}, timeout=60)["result"]
        for n in range(300):
            write(repo, f"f{n}.txt", "agent\n")
        assert raw.request("snapshot/capture", {"phase": "after"}, timeout=60)["result"]
        raw.write({"jsonrpc": "2.0", "id": raw.next_id(), "method": "snapshot/undo"})
        raw.write({"jsonrpc": "2.0", "id": raw.next_id(), "method": "shutdown"})
        raw.notify("exit", None)
        assert raw.proc.wait(60) == 0
        time.sleep(0.2)  # the last of stderr
        assert not [line for line in raw.stderr_tail if b"Traceback" in line]
        assert {read(repo, f"f{n}.txt") for n in range(300)} == {"v\n"}
    finally:
        if raw.alive():
            raw.proc.kill()
