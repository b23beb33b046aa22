"""The snapshot/* protocol over the real server: diff results, errors, notifications.

Every test drives the real server process over stdio (the `client` fixture) on a
real git repository in tmp_path.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from helpers import (
    SERVER_CONFIG,
    git,
    open_session,
    read,
    run_cli,
    to_plain,
    write,
)
from turnback.lsp.pygls_internals import send_raw_notification, send_raw_request

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
REQUEST_CANCELLED = -32800
REQUEST_FAILED = -32803
TIMEOUT = 10
#: Ten times the watcher's poll interval: long enough for a notification that is coming.
NOTIFY_TIMEOUT = 5

TEN_LINES = "".join(f"l{i}\n" for i in range(1, 11))


async def call(client: LanguageClient, method: str, params=None):
    """A custom request with a timeout, so a server that never answers fails the test."""
    result = await asyncio.wait_for(client.protocol.send_request_async(method, params), TIMEOUT)
    return to_plain(result)


async def rpc_error(client: LanguageClient, method: str, params) -> JsonRpcException:
    """The JSON-RPC error a request gets; fails if it succeeds or never answers."""
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(client.protocol.send_request_async(method, params), TIMEOUT)
    return info.value


async def raw_request_error(client: LanguageClient, method: str, params) -> JsonRpcException:
    """Sends params exactly as given (the client would refuse to serialise ill-typed ones)."""
    msg_id = f"raw-{uuid.uuid4().hex}"
    future = send_raw_request(client.protocol, msg_id, method, params)
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(asyncio.wrap_future(future), TIMEOUT)
    return info.value


async def still_answers(client: LanguageClient) -> None:
    listing = await call(client, "snapshot/list", {})
    assert "turns" in listing
    turn = await call(client, "snapshot/capture", {"label": "after-error"})
    assert turn["state"] == "active"


def by_path(diff: dict) -> dict[str, dict]:
    return {f["path"]: f for f in diff["files"]}


# ---- 1 snapshot/diff -------------------------------------------------------------------------


# Ensures a modified file's diff has git's exact hunk numbers, counts and unified text.
async def test_diff_modified_file_hunk_numbers_and_text(client, repo: Path):
    write(repo, "src/lines.py", TEN_LINES)
    await call(client, "snapshot/capture", {"label": "t1"})
    write(repo, "src/lines.py", TEN_LINES.replace("l5\n", "five-a\nfive-b\n"))
    diff = await call(client, "snapshot/diff", {})
    [entry] = diff["files"]
    assert entry["path"] == "src/lines.py"
    assert entry["status"] == "modified" and entry["oldPath"] is None
    assert entry["binary"] is False
    assert (entry["additions"], entry["deletions"]) == (2, 1)
    assert entry["hunks"] == [{"oldStart": 2, "oldLines": 7, "newStart": 2, "newLines": 8}]
    assert entry["diff"] == (
        "--- a/src/lines.py\n+++ b/src/lines.py\n@@ -2,7 +2,8 @@\n"
        " l2\n l3\n l4\n-l5\n+five-a\n+five-b\n l6\n l7\n l8\n"
    )


# Ensures added, deleted and renamed files get their statuses, and renames carry oldPath.
async def test_diff_added_deleted_renamed_statuses(client, repo: Path):
    await call(client, "snapshot/capture", {"label": "t1"})
    write(repo, "docs/new.md", "# brand new document\nwith two lines\n")
    (repo / "README.md").unlink()
    (repo / "src/app.py").rename(repo / "src/main.py")
    files = by_path(await call(client, "snapshot/diff", {}))
    assert set(files) == {"docs/new.md", "README.md", "src/main.py"}
    added, deleted, renamed = files["docs/new.md"], files["README.md"], files["src/main.py"]
    assert added["status"] == "added" and added["additions"] == 2 and added["deletions"] == 0
    assert added["hunks"] == [{"oldStart": 0, "oldLines": 0, "newStart": 1, "newLines": 2}]
    assert added["diff"].startswith("--- /dev/null\n+++ b/docs/new.md\n")
    assert deleted["status"] == "deleted" and deleted["deletions"] == 1
    assert deleted["diff"].startswith("--- a/README.md\n+++ /dev/null\n")
    assert renamed["status"] == "renamed" and renamed["oldPath"] == "src/app.py"
    assert renamed["hunks"] == [] and renamed["diff"] == ""
    assert "oldMode" not in renamed and "oldMode" not in added  # no mode changed


# Ensures a turn that only changed a file's mode says so: it showed as a bare "modified"
# with nothing telling what changed.
async def test_diff_names_a_mode_change(client, repo: Path):
    await call(client, "snapshot/capture", {"label": "t1"})
    os.chmod(repo / "src/app.py", 0o755)
    [changed] = (await call(client, "snapshot/diff", {}))["files"]
    assert (changed["status"], changed["oldMode"], changed["newMode"]) == (
        "modified",
        "100644",
        "100755",
    )
    assert changed["diff"] == "" and changed["hunks"] == []


# Ensures a file replaced by a symlink is one entry naming both modes, as protocol.md and
# git's "T" have it: it was listed twice under one path (deleted, then added), and a client
# keying files by path saw one of them.
async def test_diff_of_a_file_replaced_by_a_symlink_is_one_entry(client, repo: Path):
    await call(client, "snapshot/capture", {"label": "t1"})
    (repo / "src/app.py").unlink()
    os.symlink("../README.md", repo / "src/app.py")
    [changed] = (await call(client, "snapshot/diff", {}))["files"]
    assert (changed["path"], changed["status"], changed["oldMode"], changed["newMode"]) == (
        "src/app.py",
        "modified",
        "100644",
        "120000",
    )
    listed = await call(client, "snapshot/list", {"includeFiles": True})
    assert listed["turns"][0]["files"] == [
        {"path": "src/app.py", "oldPath": None, "status": "modified"}
    ]


# Ensures a binary file is flagged binary with no hunks and no diff text, also one over
# the diff's size limit (its first 8,000 bytes decide, as git's do).
async def test_diff_binary_file_has_no_hunks(client, repo: Path):
    write(repo, "blob.bin", b"\x00\x01\x02header\n")
    await call(client, "snapshot/capture", {"label": "t1"})
    write(repo, "blob.bin", b"\x00\x01\x02changed header\nmore\n")
    write(repo, "fresh.bin", b"PK\x00\x00\x03\x04")
    write(repo, "large.bin", b"\x00" + b"\x01" * (3 << 20))  # over the 2 MiB diff limit
    files = by_path(await call(client, "snapshot/diff", {}))
    assert files["blob.bin"]["status"] == "modified"
    assert files["fresh.bin"]["status"] == "added"
    for entry in files.values():
        assert entry["binary"] is True, entry["path"]
        assert entry["hunks"] == [] and entry["diff"] == ""
    side = await call(client, "snapshot/fileContent", {"turn": 1, "path": "large.bin"})
    assert side["binary"] is True and side["tooLarge"] is True


# Ensures the `path` param limits the diff to that file (or folder).
async def test_diff_path_filter(client, repo: Path):
    await call(client, "snapshot/capture", {"label": "t1"})
    write(repo, "src/app.py", "print('agent')\nprint('more')\n")
    write(repo, "README.md", "hello agent\n")
    assert set(by_path(await call(client, "snapshot/diff", {}))) == {"src/app.py", "README.md"}
    only = await call(client, "snapshot/diff", {"path": "src/app.py"})
    assert [f["path"] for f in only["files"]] == ["src/app.py"]
    folder = await call(client, "snapshot/diff", {"path": "src"})
    assert [f["path"] for f in folder["files"]] == ["src/app.py"]
    absolute = await call(client, "snapshot/diff", {"path": str(repo / "README.md")})
    assert [f["path"] for f in absolute["files"]] == ["README.md"]


# Ensures `context` changes the hunks: 3 lines merge two nearby edits, 0 lines splits them.
async def test_diff_context_param_changes_hunks(client, repo: Path):
    write(repo, "src/lines.py", TEN_LINES)
    await call(client, "snapshot/capture", {"label": "t1"})
    write(repo, "src/lines.py", TEN_LINES.replace("l3\n", "L3\n").replace("l7\n", "L7\n"))
    default = by_path(await call(client, "snapshot/diff", {}))["src/lines.py"]
    assert default["hunks"] == [{"oldStart": 1, "oldLines": 10, "newStart": 1, "newLines": 10}]
    zero = by_path(await call(client, "snapshot/diff", {"context": 0}))["src/lines.py"]
    assert zero["hunks"] == [
        {"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 1},
        {"oldStart": 7, "oldLines": 1, "newStart": 7, "newLines": 1},
    ]
    assert "@@ -3 +3 @@\n-l3\n+L3\n@@ -7 +7 @@\n-l7\n+L7\n" in zero["diff"]
    one = by_path(await call(client, "snapshot/diff", {"context": 1}))["src/lines.py"]
    assert [h["oldStart"] for h in one["hunks"]] == [2, 6]


# Ensures `turn` selects a turn by number and by id, and the default is the newest active turn.
async def test_diff_turn_by_number_id_and_default(client, repo: Path):
    first = await call(client, "snapshot/capture", {"label": "t1"})
    write(repo, "src/app.py", "print('turn one')\n")
    second = await call(client, "snapshot/capture", {"label": "t2"})
    write(repo, "README.md", "hello from turn two\n")
    for selector in (1, first["id"]):
        diff = await call(client, "snapshot/diff", {"turn": selector})
        assert diff["turn"]["turn"] == 1 and diff["turn"]["id"] == first["id"]
        assert list(by_path(diff)) == ["src/app.py"]
    default = await call(client, "snapshot/diff", {})
    assert default["turn"]["id"] == second["id"]
    assert list(by_path(default)) == ["README.md"]
    await call(client, "snapshot/undo", {})
    after_undo = await call(client, "snapshot/diff", {})
    assert after_undo["turn"]["id"] == first["id"]


# Ensures the newest unsealed turn diffs against the work tree as it is now.
async def test_diff_unsealed_turn_tracks_workspace(client, repo: Path):
    await call(client, "snapshot/capture", {"label": "t1"})
    write(repo, "src/app.py", "print('v2')\n")
    first = by_path(await call(client, "snapshot/diff", {}))["src/app.py"]
    assert "+print('v2')\n" in first["diff"]
    write(repo, "src/app.py", "print('v3 is longer')\n")
    second = by_path(await call(client, "snapshot/diff", {}))["src/app.py"]
    assert "+print('v3 is longer')\n" in second["diff"] and "v2" not in second["diff"]


# Ensures a sealed turn diffs snapshot → "after" capture; later edits do not show.
async def test_diff_sealed_turn_ignores_later_edits(client, repo: Path):
    await call(client, "snapshot/capture", {"label": "t1"})
    write(repo, "src/app.py", "print('agent')\n")
    sealed = await call(client, "snapshot/capture", {"phase": "after"})
    assert sealed["sealed"] is True
    write(repo, "src/app.py", "print('user typed later')\n")
    write(repo, "README.md", "user edit after the seal\n")
    diff = await call(client, "snapshot/diff", {})
    files = by_path(diff)
    assert list(files) == ["src/app.py"]
    assert files["src/app.py"]["diff"].endswith("-print('v1')\n+print('agent')\n")


# ---- 2, 3 errors -----------------------------------------------------------------------------


# Ensures an unknown turn (number or id) is InvalidParams naming "turn".
@pytest.mark.parametrize("turn", [99, "0123456789abcdef"])
async def test_diff_unknown_turn_is_invalid_params(client, turn):
    await call(client, "snapshot/capture", {"label": "t1"})
    error = await rpc_error(client, "snapshot/diff", {"turn": turn})
    assert error.code == INVALID_PARAMS
    assert "turn" in error.message
    assert to_plain(error.data) == {"field": "turn"}
    await still_answers(client)


# Ensures diff with no turn given and no active turn is InvalidParams naming "turn".
async def test_diff_without_active_turn_is_invalid_params(client):
    error = await rpc_error(client, "snapshot/diff", {})
    assert error.code == INVALID_PARAMS and "turn" in error.message
    await call(client, "snapshot/capture", {"label": "t1"})
    await call(client, "snapshot/undo", {})
    error = await rpc_error(client, "snapshot/diff", {})
    assert error.code == INVALID_PARAMS and "turn" in error.message
    assert (await call(client, "snapshot/diff", {"turn": 1}))["turn"]["state"] == "undone"


BAD_INPUTS = [
    ("snapshot/capture", {"phase": "sideways"}, "phase"),
    ("snapshot/capture", {"label": 5}, "label"),
    ("snapshot/capture", {"metadata": "x"}, "metadata"),
    ("snapshot/capture", {"session": 7}, "session"),
    ("snapshot/capture", {"session": ""}, "session"),
    ("snapshot/capture", {"session": " \t"}, "session"),
    ("snapshot/undo", {"count": 0}, "count"),
    ("snapshot/undo", {"count": "2"}, "count"),
    ("snapshot/undo", {"count": -1}, "count"),
    ("snapshot/undo", {"force": "yes"}, "force"),
    ("snapshot/undo", {"dryRun": 1}, "dryRun"),
    ("snapshot/redo", {"count": 0}, "count"),
    ("snapshot/list", {"limit": 0}, "limit"),
    ("snapshot/diff", {"context": -1}, "context"),
    ("snapshot/diff", {"turn": [1]}, "turn"),
    ("snapshot/diff", {"path": "../etc/passwd"}, "path"),
    ("snapshot/diff", {"path": "/etc/passwd"}, "path"),
    ("snapshot/diff", {"path": "src/a\x00pp.py"}, "path"),
    ("snapshot/capture", [1, 2], "params"),
    ("snapshot/list", ["x"], "params"),
    ("snapshot/capture", {"workspace": "not-a-uri"}, "workspace"),
    ("snapshot/prune", {"keep": -1}, "keep"),
    # Checked by the engine alone (lsp/params.py passes them as sent).
    ("snapshot/capture", {"turn": [1]}, "turn"),
    ("snapshot/list", {"limit": True}, "limit"),
    ("snapshot/diff", {"context": 1001}, "context"),
    ("snapshot/prune", {"keep": 1, "rescued": "yes"}, "rescued"),
    ("snapshot/prune", {"olderThan": 5}, "olderThan"),
    ("snapshot/rescue", {"id": 5}, "id"),
    ("snapshot/capture", {"metadata": {"deep": json.loads("[" * 64 + "]" * 64)}}, "metadata"),
]


# Ensures every malformed input gets InvalidParams naming the field, and the server goes on.
async def test_bad_inputs_are_invalid_params_naming_the_field(client):
    await call(client, "snapshot/capture", {"label": "t1"})  # so undo/redo/diff get that far
    wrong = []
    for method, params, field in BAD_INPUTS:
        try:
            result = await call(client, method, params)
        except JsonRpcException as error:
            data = to_plain(error.data) or {}
            if error.code != INVALID_PARAMS or field not in error.message:
                wrong.append((method, params, error.code, error.message))
            elif data.get("field") != field:
                wrong.append((method, params, "data", data))
        else:
            wrong.append((method, params, "no error", result))
        listing = await call(client, "snapshot/list", {})
        assert listing["turns"][-1]["turn"] == 1, (method, params)
    assert wrong == []
    await still_answers(client)


# Ensures a workspace given as `file:/abs` (RFC 8089's short form, as `path` takes it) is
# that folder, and `file:relative` is refused: only `file:///abs` was taken before.
async def test_workspace_in_the_short_file_uri_form(client, repo: Path):
    listing = await call(client, "snapshot/list", {"workspace": f"file:{repo.resolve()}"})
    assert listing["workTree"] == repo.resolve().as_uri()
    error = await rpc_error(client, "snapshot/list", {"workspace": "file:src"})
    assert error.code == INVALID_PARAMS and "workspace" in error.message


# Ensures a bad session name is refused by prune before there is any session: it was
# checked only against existing timelines, so `session: ""` passed on a fresh work tree.
async def test_prune_refuses_a_bad_session_with_no_sessions_yet(client):
    error = await rpc_error(client, "snapshot/prune", {"session": "", "keep": 1})
    assert error.code == INVALID_PARAMS and "session" in error.message
    await still_answers(client)


# Ensures a rejected capture writes nothing: no turn appears in the timeline.
async def test_rejected_capture_records_no_turn(client):
    await rpc_error(client, "snapshot/capture", {"metadata": "x"})
    await rpc_error(client, "snapshot/capture", {"phase": "sideways"})
    listing = await call(client, "snapshot/list", {})
    assert listing["turns"] == []
    turn = await call(client, "snapshot/capture", {"label": "ok"})
    assert turn["turn"] == 1


# Ensures metadata as deep as the engine takes (64 levels) is answered and listed back as
# sent: at about 400 levels pygls could not send the answer, and every later answer naming
# the turn never came.
async def test_deepest_metadata_taken_round_trips(client):
    metadata = {"deep": json.loads("[" * 63 + "]" * 63)}
    turn = await call(client, "snapshot/capture", {"metadata": metadata})
    assert turn["metadata"] == metadata
    assert (await call(client, "snapshot/list", {}))["turns"][0]["metadata"] == metadata


# ---- 4 no open turn --------------------------------------------------------------------------


# Ensures an "after" capture with no open turn is RequestFailed with reason noOpenTurn.
async def test_after_capture_without_open_turn(client):
    error = await rpc_error(client, "snapshot/capture", {"phase": "after"})
    assert error.code == REQUEST_FAILED
    assert to_plain(error.data)["reason"] == "noOpenTurn"
    await still_answers(client)


# ---- 5, 6 protocol robustness ----------------------------------------------------------------


# Ensures odd notifications (a change to a document never opened, a cancel whose id is no
# request's) are dropped quietly: each used to pop a raw Python exception at the user.
async def test_odd_notifications_are_dropped_quietly(client, repo: Path):
    document = {"uri": (repo / "README.md").as_uri(), "version": 2}
    for method, params in (
        (
            types.TEXT_DOCUMENT_DID_CHANGE,
            {"textDocument": document, "contentChanges": [{"text": "x"}]},
        ),
        (types.CANCEL_REQUEST, {"id": {}}),
    ):  # sent as written: the client would refuse the cancel's id
        send_raw_notification(client.protocol, method, params)
    await still_answers(client)
    assert [m.message for m in client.messages if m.type == types.MessageType.Error] == []


# Ensures a standard request whose params do not fit its LSP type is answered with an error.
async def test_malformed_lsp_request_gets_error_response(client):
    error = await raw_request_error(client, "textDocument/codeLens", {"textDocument": 5})
    assert error.code == INVALID_PARAMS
    assert "textDocument/codeLens" in error.message
    await still_answers(client)


# Ensures an unknown method is MethodNotFound and the server keeps answering.
@pytest.mark.parametrize("method", ["snapshot/doesNotExist", "turnback/nothingHere"])
async def test_unknown_method_is_method_not_found(client, method):
    error = await rpc_error(client, method, {})
    assert error.code == METHOD_NOT_FOUND
    await still_answers(client)


# ---- 7 snapshot/didChange --------------------------------------------------------------------


# Ensures a CLI capture in the workspace is announced with snapshot/didChange, unprompted.
async def test_did_change_after_cli_capture(client, repo: Path):
    fut = client.protocol.wait_for_notification_async("snapshot/didChange")
    done = await asyncio.to_thread(run_cli, repo, "capture", "--label", "x")
    assert done.returncode == 0, done.stderr
    params = to_plain(await asyncio.wait_for(fut, NOTIFY_TIMEOUT))
    assert params["workspace"] == repo.resolve().as_uri()
    assert params["session"] == "default"


# Ensures the server's own capture is announced with snapshot/didChange for its session.
async def test_did_change_after_server_capture(client, repo: Path):
    fut = client.protocol.wait_for_notification_async("snapshot/didChange")
    await call(client, "snapshot/capture", {"session": "agent-7", "label": "x"})
    params = to_plain(await asyncio.wait_for(fut, NOTIFY_TIMEOUT))
    assert params == {"workspace": repo.resolve().as_uri(), "session": "agent-7"}


# ---- 8 work-done progress --------------------------------------------------------------------


# Ensures a capture with a client workDoneToken reports begin ... end on that token.
async def test_capture_reports_work_done_progress(client):
    token = "capture-progress-1"
    client.progress_reports[token] = []  # the client created this token itself
    await call(client, "snapshot/capture", {"label": "t1", "workDoneToken": token})
    for _ in range(50):
        reports = client.progress_reports[token]
        if reports and reports[-1].kind == "end":
            break
        await asyncio.sleep(0.1)
    kinds = [r.kind for r in client.progress_reports[token]]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert set(kinds[1:-1]) <= {"report"}
    assert "captur" in client.progress_reports[token][0].title


# ---- 9 settings ------------------------------------------------------------------------------


@pytest_lsp.fixture(config=SERVER_CONFIG)
async def bad_settings_client(lsp_client: LanguageClient, repo: Path):
    """The server started with a malformed setting in initializationOptions."""
    await open_session(lsp_client, repo, untrackedFileSizeLimit="big")
    yield lsp_client
    await lsp_client.shutdown_session()


# Ensures a bad setting value is reported by name and the default is used instead.
async def test_bad_setting_warns_and_uses_default(bad_settings_client, repo: Path):
    client = bad_settings_client
    for _ in range(50):
        if client.messages:
            break
        await asyncio.sleep(0.1)
    warnings = [m for m in client.messages if m.type == types.MessageType.Warning]
    assert any("untrackedFileSizeLimit" in m.message for m in warnings), client.messages
    write(repo, "notes/big.txt", "x" * 200_000 + "\n")  # well under the 10 MB default
    turn = await call(client, "snapshot/capture", {"label": "t1"})
    assert turn["skipped"] == []
    (repo / "notes/big.txt").unlink()
    await call(client, "snapshot/undo", {})
    assert read(repo, "notes/big.txt") == "x" * 200_000 + "\n"


# ---- 10 cancellation -------------------------------------------------------------------------


# Ensures a cancelled capture leaves the timeline consistent: the turn is all there or absent.
async def test_cancelled_capture_is_all_or_nothing(client, repo: Path):
    outcomes = []
    for attempt in range(3):
        write(repo, f"work/file{attempt}.txt", f"attempt {attempt}\n")
        before = await call(client, "snapshot/list", {})
        msg_id = f"cancel-me-{attempt}"
        future = client.protocol.send_request(
            "snapshot/capture", {"label": f"c{attempt}"}, msg_id=msg_id
        )
        client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        try:
            turn = to_plain(await asyncio.wait_for(asyncio.wrap_future(future), TIMEOUT))
        except JsonRpcException as error:
            assert error.code == REQUEST_CANCELLED, error.message
            turn = None
        after = await call(client, "snapshot/list", {})
        if turn is None:
            assert after["turns"] == before["turns"]
        else:
            assert [t["id"] for t in after["turns"]] == [turn["id"]] + [
                t["id"] for t in before["turns"]
            ]
            diff = await call(client, "snapshot/diff", {"turn": turn["id"]})
            assert diff["turn"]["id"] == turn["id"]
        outcomes.append(turn is not None)
    fresh = await call(client, "snapshot/capture", {"label": "after cancels"})
    assert fresh["turn"] == sum(outcomes) + 1
    assert (await call(client, "snapshot/list", {}))["turns"][0]["id"] == fresh["id"]


# Ensures a capture waiting for the repository's lock, which another process holds (a long
# CLI undo), is cancelled at once: it waited the lock's whole 30 s, then answered busy.
async def test_a_capture_waiting_for_the_lock_is_cancelled_at_once(client, repo: Path):
    await call(client, "snapshot/capture", {"label": "makes the lock file"})
    lock = repo / ".git" / "turnback" / "lock"
    holder = subprocess.Popen(["flock", "-o", str(lock), "sleep", "60"])  # -o: sleep holds none
    try:
        await asyncio.sleep(0.5)  # flock holds it
        future = client.protocol.send_request(
            "snapshot/capture", {"label": "blocked"}, msg_id="waits"
        )
        await asyncio.sleep(1)
        started = time.monotonic()
        # Raw: pygls's client cancels its own future on sending the cancel (no answer read).
        send_raw_notification(client.protocol, types.CANCEL_REQUEST, {"id": "waits"})
        with pytest.raises(JsonRpcException) as cancelled:
            await asyncio.wait_for(asyncio.wrap_future(future), TIMEOUT)
        assert cancelled.value.code == REQUEST_CANCELLED
        assert time.monotonic() - started < 10
    finally:
        holder.kill()
        holder.wait()
    assert len((await call(client, "snapshot/list", {}))["turns"]) == 1


# Ensures the Cancel button of a capture's progress (`window/workDoneProgress/cancel`, sent
# once the progress began) cancels the capture as `$/cancelRequest` does: no turn.
async def test_progress_cancel_button_cancels_the_capture(client, repo: Path):
    for n in range(3000):
        write(repo, f"many/f{n}.txt", f"{n}\n")
    git(repo, "add", "many")
    git(repo, "commit", "-q", "-m", "many")
    for n in range(3000):  # 3,000 tracked files to hash: a capture that lasts past its
        write(repo, f"many/f{n}.txt", f"changed {n}\n")  # progress's first report
    token = "capture-progress"
    future = client.protocol.send_request(
        "snapshot/capture", {"label": "cancelled", "workDoneToken": token}
    )
    for _ in range(200):
        if client.progress_reports.get(token):
            break
        await asyncio.sleep(0.02)
    client.protocol.notify(
        types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token)
    )
    with pytest.raises(JsonRpcException) as cancelled:
        await asyncio.wait_for(asyncio.wrap_future(future), TIMEOUT)
    assert cancelled.value.code == REQUEST_CANCELLED
    assert (await call(client, "snapshot/list", {}))["turns"] == []


# Ensures undo and redo can name a turn: every turn down to (up to) it, never a guessed count.
async def test_undo_and_redo_to_a_turn(client, repo: Path):
    turns = []
    for n in range(1, 4):
        turns.append(await call(client, "snapshot/capture", {"label": f"t{n}"}))
        write(repo, "src/app.py", f"print('after turn {n}')\n")
    undone = await call(client, "snapshot/undo", {"turn": turns[1]["id"]})
    assert [t["turn"] for t in undone["turns"]] == [3, 2]
    assert read(repo, "src/app.py") == "print('after turn 1')\n"
    redone = await call(client, "snapshot/redo", {"turn": 2})
    assert [t["turn"] for t in redone["turns"]] == [2]
    error = await rpc_error(client, "snapshot/undo", {"turn": 3})
    assert error.code == -32602 and "turn" in error.message
    listing = await call(client, "snapshot/list", {})
    assert listing["workTree"] == repo.resolve().as_uri()
