"""Hostile input: fuzzed params, malformed JSON-RPC frames, hostile paths and trees.

- Every custom request (and turnback.* commands) with random and malformed params gets
  a result or a JSON-RPC error within a bounded time (asyncio-free: a raw client with a
  timeout per request), never -32603 for bad input, and the server stays up.
- Malformed frames written raw to stdin leave the server up, answering the next request.
- Work trees with non-UTF-8, very long and odd names and symlinks out of the workspace
  round-trip byte for byte through capture, undo and redo, and nothing outside the
  workspace or in `.git` changes.
- Snapshot trees crafted to hold `.git`, `..` and other unsafe entries, made into turns,
  never make undo or redo write into `.git` or outside the workspace.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygit2.enums import FileMode
from reliability_support import (
    ABSENT,
    PROFILE,
    RawServer,
    dir_state,
    git_dir_state,
    record_figures,
    scaled,
)

from helpers import make_repo, tree_state, write
from turnback.engine import Engine, RestoreOptions
from turnback.history.timeline import Timeline, TimelineStore, TurnRecord, now_rfc3339

INTERNAL_ERROR = -32603
#: Codes a well-behaved server may answer to bad input.
CLEAR_ERRORS = {-32602, -32803, -32601, -32600, -32700, -32800}
CUSTOM = [
    "snapshot/capture",
    "snapshot/undo",
    "snapshot/redo",
    "snapshot/list",
    "snapshot/diff",
    "snapshot/fileContent",
    "snapshot/prune",
    "snapshot/rescue",
]
COMMANDS = ["turnback.capture", "turnback.undo", "turnback.redo", "turnback.showDiff"]
COMMANDS += ["turnback.revertHunk"]
PARAM_NAMES = [
    "workspace",
    "session",
    "label",
    "phase",
    "metadata",
    "workDoneToken",
    "count",
    "force",
    "dryRun",
    "limit",
    "includeFiles",
    "turn",
    "path",
    "context",
    "side",
    "keep",
    "olderThan",
    "uri",
    "oldStart",
    "oldLines",
    "newStart",
    "newLines",
    "id",
    "paths",
    "rescued",
]


@pytest.fixture(scope="module")
def playground(tmp_path_factory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("hostile")
    repo = make_repo(
        root / "repo",
        {"README.md": "hello\n", "src/app.py": "print('v1')\n", ".gitignore": "*.log\n"},
    )
    outside = root / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside the workspace\n")
    os.symlink(outside, repo / "link-out")
    write(repo, "ignored.log", "ignored, never touched\n")
    return {"root": root, "repo": repo, "outside": outside}


# ---- the strategies ----------------------------------------------------------------------

NASTY_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",  # a lone surrogate: valid JSON (\ud800), not valid UTF-8
        "a\udcffb",
        "é🙂\u202e",
        "..",
        "../../outside/secret.txt",
        "/etc/passwd",
        "file:///etc/passwd",
        "file:///nonexistent/folder",
        "file://host/share",
        "link-out/secret.txt",
        ".git",
        ".git/config",
        "src/../../x",
        "C:\\Windows",
        "\\\\server\\share",
        "%2e%2e/x",
        "-1",
        "1e400",
        "0",
        "before",
        "after",
        "default",
        "7d",
        "99999999999999999999d",
        "2026-13-45T99:99:99Z",
        "x" * 5000,
        "../" * 2000,
    ]
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    NASTY_STRINGS,
)
KEYS = st.one_of(
    st.sampled_from(PARAM_NAMES + ["jsonrpc", "id", "method", ""]), st.text(max_size=6)
)
JSON = st.recursive(
    LEAVES,
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(KEYS, kids, max_size=3),
    max_leaves=10,
)
PLAUSIBLE: dict[str, st.SearchStrategy] = {
    "session": st.sampled_from(["default", "other", "s"]),
    "label": st.text(max_size=20),
    "phase": st.sampled_from(["before", "after", "during", "BEFORE"]),
    "metadata": st.dictionaries(st.text(max_size=5), LEAVES, max_size=3),
    "count": st.integers(-2, 4) | st.integers(2**31, 2**80),
    "force": st.booleans(),
    "dryRun": st.booleans(),
    "limit": st.integers(-1, 3),
    "includeFiles": st.booleans(),
    "turn": st.integers(-1, 5) | st.text("0123456789abcdef", min_size=16, max_size=16),
    "path": st.sampled_from(["README.md", "src", "src/app.py", "nope.txt", "link-out"]),
    "context": st.integers(-1, 1001),
    "side": st.sampled_from(["before", "after", "middle"]),
    "keep": st.integers(-1, 3),
    "olderThan": st.sampled_from(["1s", "7d", "2w", "2026-01-01T00:00:00Z", "soon"]),
    "oldStart": st.integers(-1, 5),
    "oldLines": st.integers(-1, 5),
}


def param_value(name: str) -> st.SearchStrategy:
    plausible = PLAUSIBLE.get(name)
    return JSON if plausible is None else st.one_of(plausible, JSON)


PARAMS = st.one_of(
    st.fixed_dictionaries({}, optional={name: param_value(name) for name in PARAM_NAMES}),
    JSON,
    st.just(ABSENT),
)
CASES = st.one_of(
    st.tuples(st.sampled_from(CUSTOM), PARAMS),
    st.tuples(
        st.just("workspace/executeCommand"),
        st.one_of(
            st.fixed_dictionaries(
                {
                    "command": st.sampled_from(COMMANDS) | st.text(max_size=8),
                    "arguments": st.one_of(
                        st.lists(PARAMS.filter(lambda p: p is not ABSENT), max_size=2), JSON
                    ),
                }
            ),
            JSON,
        ),
    ),
)


def defuse(params: Any, repo: Path) -> Any:
    """Never let a fuzzed `workspace` name a real folder outside the playground repo."""
    if isinstance(params, dict):
        out = {}
        for key, value in params.items():
            if key in ("workspace", "uri") and isinstance(value, str) and "://" in value:
                from pygls.uris import to_fs_path

                try:
                    path = to_fs_path(value)
                except Exception:  # noqa: BLE001 - junk URIs are the point
                    path = None
                if path and os.path.isdir(path) and not Path(path).is_relative_to(repo):
                    value = repo.as_uri()
            out[key] = defuse(value, repo)
        return out
    if isinstance(params, list):
        return [defuse(v, repo) for v in params]
    return params


def walk_values(value: Any):
    yield value
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from walk_values(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk_values(item)


def has_surrogate(value: Any) -> bool:
    return any(
        isinstance(v, str) and any(0xD800 <= ord(c) <= 0xDFFF for c in v)
        for v in walk_values(value)
    )


def has_jsonrpc_key(value: Any) -> bool:
    return any(isinstance(v, dict) and "jsonrpc" in v for v in walk_values(value))


def huge_duration(value: Any) -> bool:
    return any(
        isinstance(v, dict)
        and isinstance(v.get("olderThan"), str)
        and re.fullmatch(r"\d{10,}[smhdw]", v["olderThan"]) is not None
        for v in walk_values(value)
    )


def bad_progress_token(value: Any) -> bool:
    return any(
        isinstance(v, dict)
        and v.get("workDoneToken") is not None
        and (isinstance(v["workDoneToken"], bool) or not isinstance(v["workDoneToken"], (int, str)))
        for v in walk_values(value)
    )


#: Known product bugs, pinned by strict-xfail tests below: an internal error on an input
#: that triggers one is counted under its name instead of failing the fuzz test.
KNOWN_BUGS: dict = {}  # every bug this table used to pin is fixed; add new ones here


def known_bug(params: Any, message: str) -> str | None:
    for name, (triggers, sign) in KNOWN_BUGS.items():
        if triggers(params) and sign in message:
            return name
    return None


# ---- fuzzing the requests ----------------------------------------------------------------


@pytest.fixture(scope="module")
def fuzz_server(playground):
    server = RawServer(playground["repo"])
    server.request("snapshot/capture", {"label": "a turn to aim at"})
    write(playground["repo"], "src/app.py", "print('v2')\n")
    yield server
    server.close()


FUZZ: Counter = Counter()


# Ensures every custom request and turnback.* command answers fuzzed params with a result or
# a clear JSON-RPC error (never -32603, never a hang), and the server stays up.
@settings(PROFILE, max_examples=scaled(400, 5000))
@given(case=CASES)
def test_fuzzed_requests_get_a_result_or_a_clear_error(case, fuzz_server, playground) -> None:
    method, params = case
    params = defuse(params, playground["repo"])
    FUZZ["cases"] += 1
    FUZZ[method] += 1
    started = time.monotonic()
    try:
        answer = fuzz_server.request(method, params, timeout=30)
    except TimeoutError:
        pytest.fail(f"no answer within 30 s (alive: {fuzz_server.alive()}): {method} {params!r}")
    FUZZ["slowest_ms"] = max(FUZZ["slowest_ms"], int((time.monotonic() - started) * 1000))
    assert fuzz_server.alive()
    assert ("result" in answer) != ("error" in answer), answer
    if "result" in answer:
        FUZZ["results"] += 1
        if method.startswith("snapshot/"):
            assert isinstance(answer["result"], dict), answer
        return
    error = answer["error"]
    message = error.get("message", "")
    FUZZ[f"error {error['code']}"] += 1
    if error["code"] == INTERNAL_ERROR:
        bug = known_bug(params, message)
        assert bug, f"internal error for bad input: {method} {params!r}: {message}"
        FUZZ[f"known bug {bug}"] += 1
        return
    assert error["code"] in CLEAR_ERRORS, answer
    assert message and "Traceback" not in message, answer
    if method.startswith("snapshot/") and error["code"] == -32602:
        assert "field" in (error.get("data") or {}), f"-32602 must name the field: {answer}"


# Ensures the fuzzing changed nothing outside the workspace or in the user's .git, and left
# the server answering (runs after the fuzz test, in file order).
def test_after_fuzzing_nothing_outside_changed(fuzz_server, playground, request) -> None:
    assert fuzz_server.alive()
    assert "result" in fuzz_server.request("snapshot/list", {}, timeout=30)
    assert (playground["outside"] / "secret.txt").read_text() == "outside the workspace\n"
    assert dir_state(playground["outside"]) == {
        "secret.txt": ("file", b"outside the workspace\n", 0o644 & ~_umask())
    }
    assert (playground["repo"] / "ignored.log").read_text() == "ignored, never touched\n"
    record_figures(request, "fuzzed requests", dict(sorted(FUZZ.items())))


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# Ensures metadata of any shape without "jsonrpc" keys comes back exactly as sent.
@settings(PROFILE, max_examples=scaled(60, 600))
@given(
    metadata=st.dictionaries(
        st.text(max_size=8).filter(lambda k: k != "jsonrpc"),
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers(-(2**60), 2**60)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=10),
            lambda kids: (
                st.lists(kids, max_size=3)
                | st.dictionaries(st.text(max_size=5).filter(lambda k: k != "jsonrpc"), kids)
            ),
            max_leaves=8,
        ),
        max_size=4,
    )
)
def test_metadata_round_trips(metadata, fuzz_server) -> None:
    answer = fuzz_server.request("snapshot/capture", {"session": "meta", "metadata": metadata})
    assert answer.get("result", {}).get("metadata") == metadata, answer


# The fuzz test's KNOWN_BUGS, one explicit case each. What happens: see each reason.
@pytest.mark.parametrize(
    "metadata",
    [
        {"jsonrpc": "2.0"},
        {"x": {"jsonrpc": "2.0", "method": "snapshot/capture"}},
    ],
    ids=["top-level", "nested-message-shape"],
)
def test_metadata_with_a_jsonrpc_key_round_trips(metadata, fuzz_server) -> None:
    answer = fuzz_server.request("snapshot/capture", {"session": "meta", "metadata": metadata})
    assert answer.get("result", {}).get("metadata") == metadata, answer


# A nested object shaped like a request with an id makes the server answer that id: a
# client with a request of that id in flight gets a wrong answer.
def test_nested_request_shape_gets_no_spurious_response(fuzz_server) -> None:
    before = len(fuzz_server.received)
    nested = {"jsonrpc": "2.0", "id": 987654, "method": "textDocument/hover", "params": 1}
    answer = fuzz_server.request("snapshot/capture", {"session": "meta", "metadata": {"x": nested}})
    spurious = [m for m in fuzz_server.received[before:] if m.get("id") == 987654]
    assert not spurious, f"the server answered an id nobody sent: {spurious}"
    assert answer.get("result", {}).get("metadata") == {"x": nested}, answer


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("snapshot/capture", {"session": "s\ud800"}),
        ("snapshot/capture", {"session": "s", "label": "l\udcff"}),
        ("snapshot/capture", {"session": "s", "metadata": {"k": "\ud800"}}),
        ("snapshot/prune", {"olderThan": "99999999999999999999d"}),
        ("snapshot/capture", {"session": "s", "workDoneToken": []}),
        ("snapshot/rescue", {"id": "x\ud800"}),
        ("snapshot/rescue", {"id": "x", "paths": ["a\ud800"]}),
    ],
    ids=["session", "label", "metadata", "olderThan", "workDoneToken", "id", "paths"],
)
def test_bad_input_is_invalid_params_not_internal_error(method, params, fuzz_server) -> None:
    answer = fuzz_server.request(method, params)
    assert answer.get("error", {}).get("code") == -32602, answer


# ---- malformed frames --------------------------------------------------------------------


def _j(obj: Any) -> bytes:
    return json.dumps(obj).encode()


F = RawServer.frame
_VALID = _j({"jsonrpc": "2.0", "id": 1, "method": "snapshot/list", "params": {}})
#: Frames that are well delimited (the Content-Length is right) but malformed inside.
DELIMITED = {
    "bad JSON": F(b'{"jsonrpc": "2.0", "id": 201, "method": '),
    "missing method": F(_j({"jsonrpc": "2.0", "id": 202})),
    "wrong jsonrpc version": F(_j({"jsonrpc": "1.0", "id": 203, "method": "snapshot/list"})),
    "no jsonrpc member": F(_j({"id": 204, "method": "snapshot/list", "params": {}})),
    "array params": F(_j({"jsonrpc": "2.0", "id": 205, "method": "snapshot/list", "params": [1]})),
    "string params": F(_j({"jsonrpc": "2.0", "id": 206, "method": "snapshot/undo", "params": "x"})),
    "number params": F(_j({"jsonrpc": "2.0", "id": 207, "method": "snapshot/redo", "params": 7})),
    "batch": F(_j([{"jsonrpc": "2.0", "id": 208, "method": "snapshot/list"}])),
    "number body": F(b"5"),
    "null body": F(b"null"),
    "not UTF-8": F(b"\xff\xfe\xfd{}"),
    "id is an object": F(_j({"jsonrpc": "2.0", "id": {"a": 1}, "method": "snapshot/list"})),
    "method is a number": F(_j({"jsonrpc": "2.0", "id": 209, "method": 5})),
    "unknown method": F(_j({"jsonrpc": "2.0", "id": 210, "method": "snapshot/nope"})),
    "standard method, junk params": F(
        _j({"jsonrpc": "2.0", "id": 211, "method": "textDocument/codeLens", "params": 5})
    ),
    "notification, junk params": F(
        _j({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": 5}})
    ),
    "deeply nested": F(b"[" * 100_000 + b"]" * 100_000),
    "5 MB session": F(
        _j(
            {
                "jsonrpc": "2.0",
                "id": 212,
                "method": "snapshot/list",
                "params": {"session": "x" * 5_000_000},
            }
        )
    ),
    "Content-Length longer than the JSON, filled with junk": (
        b"Content-Length: %d\r\n\r\n" % (len(_VALID) + 40) + _VALID + b"#" * 40
    ),
    "Content-Length 1e9 then the rest": b"Content-Length: 1000000000\r\n\r\n{}",
}
#: Frames that break the framing itself: junk outside any Content-Length.
BROKEN_FRAMING = {
    "Content-Length not a number": b"Content-Length: abc\r\n\r\n{}",
    "no Content-Length header": b"Content-Type: application/json\r\n\r\n{}",
    "Content-Length shorter than the body": b"Content-Length: 10\r\n\r\n" + _VALID,
}
#: Frames carrying an id, and the JSON-RPC 2.0 error each must get (id null when unknown).
MUST_ANSWER = {
    "bad JSON": (None, -32700),
    "missing method": (202, -32600),
    "wrong jsonrpc version": (203, -32600),
    "no jsonrpc member": (204, -32600),
    "batch": (None, -32600),
    "id is an object": (None, -32600),
    "method is a number": (209, -32600),
    "array params": (205, -32602),
    "string params": (206, -32602),
    "number params": (207, -32602),
    "unknown method": (210, -32601),
    "standard method, junk params": (211, -32602),
    "5 MB session": (212, -32602),
}


def _answers_after(server: RawServer, timeout: float = 10.0) -> bool:
    try:
        return "result" in server.request("snapshot/list", {}, timeout=timeout)
    except TimeoutError:
        return False


# Ensures every malformed frame, one after another on one server, leaves it up, answering
# and small.
def test_malformed_frames_leave_the_server_answering(playground, request) -> None:
    repo = playground["repo"]
    server = RawServer(repo)
    deaf: list[str] = []
    frames = {**DELIMITED, **BROKEN_FRAMING}
    try:
        for name, data in frames.items():
            server.send(data)
            if not server.alive() or not _answers_after(server):
                deaf.append(name)
                server.proc.kill()
                server = RawServer(repo)
        assert server.alive()
        rss_kb = _rss_kb(server.proc.pid)
    finally:
        server.close()
    record_figures(
        request,
        "malformed frames",
        {"frames": len(frames), "servers": 1 + len(deaf), "deaf_after": len(deaf)},
    )
    assert not deaf, f"no answer after: {deaf}"
    assert rss_kb < 300_000, f"RSS {rss_kb} kB"


def _rss_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0])


#: What each broken frame must be answered with (id null): the stream is not a message.
BROKEN_FRAMING_ERRORS = {
    "Content-Length not a number": -32700,
    "no Content-Length header": -32700,
    "Content-Length shorter than the body": -32700,
}


def _errors_since(server: RawServer, count: int) -> list[tuple[Any, int]]:
    """(id, code) of each error answer since `count`; an answer without an `id` member (not
    JSON-RPC: it says `"id": null` when the id is unknown) shows as "no id"."""
    return [
        (m.get("id", "no id"), m["error"]["code"])
        for m in server.received[count:]
        if isinstance(m, dict) and "error" in m
    ]


# Ensures a frame that breaks the framing itself gets an error, and the very next frame
# is read again (the reader resynchronises on the next Content-Length header).
@pytest.mark.parametrize("name", list(BROKEN_FRAMING))
def test_server_resynchronises_after_broken_framing(name, playground) -> None:
    server = RawServer(playground["repo"])
    try:
        count = len(server.received)
        server.send(BROKEN_FRAMING[name])
        assert server.alive()
        assert _answers_after(server, timeout=5), "up, but deaf to every later request"
        assert (None, BROKEN_FRAMING_ERRORS[name]) in _errors_since(server, count)
    finally:
        server.proc.kill()
        server.proc.wait(10)


# Ensures an absurd Content-Length is refused at once (-32600) instead of allocated or
# waited for, and the server keeps answering.
@pytest.mark.parametrize("length", [10**9, 10**12, 2**63, int("9" * 40)])
def test_huge_content_length_is_refused_and_the_server_answers(length, playground) -> None:
    server = RawServer(playground["repo"])
    try:
        count = len(server.received)
        server.send(b"Content-Length: %d\r\n\r\n{}" % length)
        assert _answers_after(server, timeout=5), "up, but deaf after the huge frame"
        assert server.alive(), "the server exited"
        assert (None, -32600) in _errors_since(server, count)
        assert _rss_kb(server.proc.pid) < 300_000
    finally:
        server.proc.kill()
        server.proc.wait(10)


# Ensures every malformed frame that can be answered gets the JSON-RPC 2.0 error it must
# (-32700 with id null for bad JSON, -32600 for a bad request, -32602 for bad params).
def test_frames_with_an_id_get_a_json_rpc_error(playground) -> None:
    server = RawServer(playground["repo"])
    wrong: dict[str, Any] = {}
    try:
        for name, (msg_id, code) in MUST_ANSWER.items():
            count = len(server.received)
            server.send(DELIMITED[name])
            if msg_id is not None:  # handled in a worker thread: may answer after a later one
                server.wait_response(msg_id, timeout=10)
            assert _answers_after(server)
            got = _errors_since(server, count)
            if (msg_id, code) not in got:
                wrong[name] = got
    finally:
        server.close()
    assert not wrong, f"missing or wrong JSON-RPC errors: {wrong}"


# ---- hostile names and symlinks in a real work tree --------------------------------------

NON_UTF8_NAMES = [b"bad\xff\xfename.txt", b"dir\xe9/inner\x80.txt", b"latin1-caf\xe9.txt"]
HOSTILE_NAMES = [
    b"x" * 250 + b".txt",  # near NAME_MAX
    "deep/" * 30 + "leaf.txt",
    "new\nline.txt",
    "tab\tand space .txt",
    "-leading-dash.txt",
    "...",
    "é-nfc.txt",
    "e\u0301-nfd.txt",
    "emoji-🙂.txt",
    ".turnback-looks-like-a-temp.tmp",
    "#hash%20percent?.txt",
]


def _is_utf8(name: bytes) -> bool:
    try:
        name.decode()
    except UnicodeDecodeError:
        return False
    return True


def _write_name(root: Path, name: str | bytes, data: bytes) -> None:
    path = os.path.join(os.fsencode(root), name if isinstance(name, bytes) else os.fsencode(name))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


# Ensures hostile file names and symlinks out of the workspace survive capture, undo and
# redo byte for byte, and nothing outside the workspace or in .git changes.
@pytest.mark.parametrize(
    "names",
    [
        pytest.param(HOSTILE_NAMES, id="odd-utf8-names"),
        pytest.param(HOSTILE_NAMES + NON_UTF8_NAMES, id="non-utf8-names"),
    ],
)
def test_hostile_names_and_outward_symlinks_round_trip(
    tmp_path: Path, request, names: list
) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text("outside\n")
    for i, name in enumerate(names):
        _write_name(repo, name, b"v1 %d\n" % i)
    os.symlink(outside, repo / "dir-link-out")
    os.symlink(outside / "secret.txt", repo / "file-link-out")
    os.symlink("../../outside/secret.txt", repo / "relative-link-out")
    os.symlink("nowhere/at/all", repo / "dangling")
    outside_state = dir_state(outside)
    git_state = git_dir_state(repo)

    server = RawServer(repo)
    try:
        first = server.request("snapshot/capture", {"label": "hostile"}, timeout=60)
        assert "result" in first, first
        assert first["result"]["skipped"] == [], first
        before_turn = tree_state(repo)
        # The agent rewrites every hostile file, deletes some, adds more, retargets links.
        for i, name in enumerate(names):
            if i % 4 == 3:
                os.unlink(os.path.join(os.fsencode(repo), os.fsencode(name)))
            else:
                _write_name(repo, name, b"v2 %d\n" % i)
        _write_name(repo, "created-🙂.txt", b"new\n")
        os.unlink(repo / "dir-link-out")
        os.mkdir(repo / "dir-link-out")  # a real directory where the link was
        write(repo, "dir-link-out/inside.txt", "now inside\n")
        os.unlink(repo / "file-link-out")
        os.symlink("/etc/passwd", repo / "file-link-out")
        after = server.request("snapshot/capture", {"phase": "after"}, timeout=60)
        assert "result" in after, after
        after_turn = tree_state(repo)

        undone = server.request("snapshot/undo", {}, timeout=60)
        assert "result" in undone, undone
        assert undone["result"]["kept"] == [], undone
        assert tree_state(repo) == before_turn, "undo did not restore the hostile tree"
        assert dir_state(outside) == outside_state, "undo wrote outside the workspace"
        # Names that are not UTF-8 travel as surrogate escapes (PEP 383), and come back.
        undone_paths = {f["path"] for f in undone["result"]["files"]}
        for i, name in enumerate(names):
            if isinstance(name, bytes) and not _is_utf8(name):
                wire = os.fsdecode(name)
                assert wire in undone_paths, (wire, undone_paths)
                after_side = server.request("snapshot/fileContent", {"turn": 1, "path": wire})
                deleted = i % 4 == 3
                assert after_side["result"]["exists"] is not deleted, after_side
                assert after_side["result"]["text"] == ("" if deleted else f"v2 {i}\n")
                before_side = server.request(
                    "snapshot/fileContent", {"turn": 1, "path": wire, "side": "before"}
                )
                assert before_side["result"]["text"] == f"v1 {i}\n", before_side

        redone = server.request("snapshot/redo", {}, timeout=60)
        assert "result" in redone, redone
        assert tree_state(repo) == after_turn, "redo did not restore the hostile tree"

        # Hostile paths in requests: refused as outside, or answered; never -32603.
        paths = ["..", "../outside/secret.txt", str(outside / "secret.txt"), "/etc/passwd"]
        paths += ["file:///etc/passwd", "a\x00b", "x" * 5000, "\udcff", "dir-link-out/../.."]
        paths += ["bad\udcff\udcfename.txt", "link-out/secret.txt", ".git/config", "deep/" * 30]
        answers = Counter()
        for path in paths:
            for method, extra in (("snapshot/diff", {}), ("snapshot/fileContent", {"turn": 1})):
                answer = server.request(method, {"path": path, **extra}, timeout=30)
                code = answer.get("error", {}).get("code", "ok")
                answers[code] += 1
                assert code != INTERNAL_ERROR, (method, path, answer)
                text = json.dumps(answer.get("result", {}))
                assert "outside\\n" not in text and "root:" not in text, (path, answer)
        assert server.alive()
    finally:
        server.close()
    assert dir_state(outside) == outside_state, "something outside the workspace changed"
    assert git_dir_state(repo) == git_state, "the user's .git changed"
    record_figures(
        request,
        f"hostile names ({request.node.callspec.id})",
        {"names": len(names) + 5, "path_requests": sum(answers.values()), **answers},
    )


# A backslash is an ordinary character in a POSIX file name: a turn that changed such a
# file cannot be undone for it, since workwriter.check_path refuses any path holding "\\"
# (a Windows separator) on every platform, so undo keeps it as "unsafePath".
def test_backslash_name_is_restored_on_posix(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    write(repo, "back\\slash.txt", "v1\n")
    engine = Engine(str(repo))
    engine.capture(session="s")
    write(repo, "back\\slash.txt", "v2\n")
    result = engine.undo("s", RestoreOptions())
    assert result.kept == [] and (repo / "back\\slash.txt").read_text() == "v1\n", result


# ---- crafted snapshot trees: .git, .. and friends ----------------------------------------


def _raw_tree(repo: pygit2.Repository, entries: list[tuple[int, bytes, pygit2.Oid]]) -> str:
    """A tree object written straight to the object database: no name is validated."""
    body = b"".join(b"%o %s\x00" % (mode, name) + oid.raw for mode, name, oid in entries)
    return str(repo.odb.write(pygit2.GIT_OBJECT_TREE, body))


def _crafted_commit(repo: pygit2.Repository, outside: Path) -> tuple[str, list[str]]:
    """A snapshot holding entries that must never be written, and one that may."""
    blob = repo.create_blob(b"PWNED\n")
    hook = repo.create_blob(b"#!/bin/sh\necho pwned > /tmp/turnback-pwned\n")
    link = repo.create_blob(os.fsencode(str(outside)))

    def tree(entries):
        return pygit2.Oid(hex=_raw_tree(repo, entries))

    hooks = tree([(FileMode.BLOB_EXECUTABLE, b"pre-commit", hook)])
    dot_git = tree([(FileMode.BLOB, b"config", blob), (FileMode.TREE, b"hooks", hooks)])
    out_dir = tree([(FileMode.BLOB, b"pwned.txt", blob)])
    up = tree([(FileMode.TREE, outside.name.encode(), out_dir)])
    sub = tree([(FileMode.TREE, b".git", dot_git), (FileMode.BLOB, b"ok.txt", blob)])
    root_entries = sorted(
        [
            (FileMode.TREE, b".git", dot_git),
            (FileMode.TREE, b".GIT", dot_git),
            (FileMode.TREE, b"..", up),
            (FileMode.TREE, b".", out_dir),
            (FileMode.BLOB, b"a/../../escape.txt", blob),  # slashes inside one entry name
            (FileMode.BLOB, b"back\\..\\slash.txt", blob),
            (FileMode.TREE, b"sub", sub),
            (FileMode.LINK, b"evil", link),  # a symlink to outside...
            (FileMode.TREE, b"evil", out_dir),  # ...and a directory of the same name
            (FileMode.BLOB, b"safe.txt", blob),
        ],
        key=lambda e: e[1] + (b"/" if e[0] == FileMode.TREE else b""),
    )
    tree_id = tree(root_entries)
    sig = pygit2.Signature("t", "t@example.com")
    commit = repo.create_commit(None, sig, sig, "crafted", tree_id, [])
    unsafe = [".git/config", ".git/hooks/pre-commit", "../", ".GIT", "sub/.git", "escape"]
    return str(commit), unsafe


def _install_turn(engine: Engine, commit: str, state: str, replaced: str | None) -> None:
    """A timeline whose only turn starts at (undo) or returns to (redo) the crafted tree."""
    store = TimelineStore(engine.ws)
    head = str(engine.ws.head_commit())
    if state == "active":
        turn = TurnRecord(1, commit[:16], "crafted", now_rfc3339(), before=commit, head=head)
    else:
        safe = engine.snapshot_commit(engine.capture_now(None, None), "now\n")
        turn = TurnRecord(
            1, safe[:16], "crafted", now_rfc3339(), before=safe, state="undone", head=head
        )
        turn.replaced = replaced
        turn.batch = [1, 1]
    store.save(Timeline(session="crafted", turns=[turn], next_turn=2, last_capture_at=""))


# Ensures a turn whose snapshot holds .git, .., absolute-looking, backslash and
# symlink-shadowed entries never makes undo or redo write into .git or outside.
@pytest.mark.parametrize("operation", ["undo", "redo"])
def test_crafted_tree_never_writes_into_git_or_outside(tmp_path: Path, operation, request):
    repo_root = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("outside\n")
    engine = Engine(str(repo_root))
    commit, _unsafe = _crafted_commit(engine.repo, outside)
    if operation == "undo":
        _install_turn(engine, commit, "active", None)
    else:
        _install_turn(engine, commit, "undone", commit)
    outside_state = dir_state(tmp_path, skip=lambda rel: rel.startswith("repo"))
    git_state = git_dir_state(repo_root)

    try:
        result = getattr(engine, operation)("crafted", RestoreOptions(force=True))
        outcome = {
            "written": sorted(f.path for f in result.files),
            "kept": sorted((k.path, k.reason) for k in result.kept),
        }
    except Exception as error:  # a refusal is fine; an internal error is reported below
        from turnback.errors import Reason, TurnbackError

        assert isinstance(error, TurnbackError) and error.reason != Reason.INTERNAL, repr(error)
        outcome = {"refused": error.message}

    assert dir_state(tmp_path, skip=lambda rel: rel.startswith("repo")) == outside_state, (
        f"{operation} wrote outside the workspace: {outcome}"
    )
    assert git_dir_state(repo_root) == git_state, f"{operation} wrote into .git: {outcome}"
    assert not os.path.exists("/tmp/turnback-pwned")
    written = set(outcome.get("written", []))
    assert not {p for p in written if ".git" in p.lower().split("/") or ".." in p.split("/")}
    assert not (repo_root / ".GIT").exists() and not (repo_root / "sub" / ".git").exists()
    if os.path.lexists(repo_root / "evil"):
        assert not (repo_root / "evil").is_symlink() or not (outside / "pwned.txt").exists()
    record_figures(request, f"crafted tree ({operation})", outcome)
    shutil.rmtree(tmp_path / "repo", ignore_errors=True)
