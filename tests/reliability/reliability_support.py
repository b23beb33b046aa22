"""Helpers shared by the reliability tests (model-based, concurrency, hostile input).

Not in tests/helpers: only the reliability tests (and tests/wire/test_lifecycle.py's raw
server) use them. The helpers below build on tests/helpers.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import HealthCheck, settings
from pygit2.enums import FileMode
from pygls.exceptions import JsonRpcException

from helpers import SERVER_CONFIG, git, open_session

# ---- hypothesis profiles -----------------------------------------------------------------

#: CI: a few hundred steps in well under a minute, the same ones every run (a model gap a
#: new random sequence finds must not turn a landing red at random: TURNBACK_LONG=1 runs,
#: at random, look for those). "long": TURNBACK_LONG=1 for local runs.
for name, examples, steps in (("ci", 20, 15), ("long", 400, 50)):
    settings.register_profile(
        name,
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=name == "ci",
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
LONG = os.environ.get("TURNBACK_LONG") == "1"
PROFILE_NAME = "long" if LONG else "ci"
PROFILE = settings.get_profile(PROFILE_NAME)


def scaled(ci: int, long: int) -> int:
    """A count for this run: the CI figure, or the long one under TURNBACK_LONG=1."""
    return long if LONG else ci


# ---- figures -----------------------------------------------------------------------------


class _FiguresPlugin:
    """Collects each test's figures and prints them in pytest's terminal summary."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def pytest_terminal_summary(self, terminalreporter) -> None:  # noqa: ANN001
        if self.lines:
            terminalreporter.section("turnback reliability figures")
            for line in self.lines:
                terminalreporter.write_line(line)


def record_figures(request: pytest.FixtureRequest, title: str, figures: dict[str, Any]) -> None:
    """Prints `figures` (so `-s` shows them) and repeats them in the terminal summary."""
    line = f"{title}: " + ", ".join(f"{k}={v}" for k, v in figures.items())
    print(line)
    config = request.config
    plugin = getattr(config, "_turnback_figures", None)
    if plugin is None:
        plugin = _FiguresPlugin()
        config._turnback_figures = plugin  # type: ignore[attr-defined]
        config.pluginmanager.register(plugin, "turnback-reliability-figures")
    plugin.lines.append(line)


# ---- states of directories, git trees and .git -------------------------------------------

State = dict[str, tuple]


def dir_state(root: Path, skip: Callable[[str], bool] = lambda _rel: False) -> State:
    """Every entry under `root`, symlinks not followed: kind, bytes or target, mode bits.

    Paths are relative, as str with surrogate escapes for non-UTF-8 bytes; `skip(rel)`
    prunes a directory or drops a file. Directories are listed too (empty ones matter).
    """
    out: State = {}
    if not os.path.lexists(root):
        return out
    for dirpath, dirnames, filenames in os.walk(root):
        for name in list(dirnames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if skip(rel):
                dirnames.remove(name)
                continue
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            else:
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
        for name in filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if skip(rel):
                continue
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(full))
            elif stat.S_ISREG(st.st_mode):
                with open(full, "rb") as handle:
                    out[rel] = ("file", handle.read(), stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("other", stat.S_IFMT(st.st_mode))
    return out


#: What turnback may write inside .git: objects, its own refs and its private state.
_TURNBACK_GIT_AREAS = ("objects", "turnback", os.path.join("refs", "turnback"))


def _turnback_area(rel: str) -> bool:
    return any(rel == a or rel.startswith(a + os.sep) for a in _TURNBACK_GIT_AREAS) or (
        rel.startswith(os.path.join("logs", "refs", "turnback"))
    )


def git_dir_state(repo_root: Path) -> State:
    """Everything in `.git` turnback must never touch (all but its own areas)."""
    return dir_state(repo_root / ".git", skip=_turnback_area)


def user_git_state(repo_root: Path) -> dict[str, Any]:
    """The user's git state through git itself: HEAD, branches, index, stash, config."""
    return {
        "HEAD": (repo_root / ".git" / "HEAD").read_bytes(),
        "refs": [
            line
            for line in git(repo_root, "for-each-ref", "--format=%(refname) %(objectname)").split(
                "\n"
            )
            if line and not line.startswith("refs/turnback/")
        ],
        "index": (repo_root / ".git" / "index").read_bytes()
        if (repo_root / ".git" / "index").exists()
        else None,
        "config": (repo_root / ".git" / "config").read_bytes(),
    }


def tree_files(repo: pygit2.Repository, tree: pygit2.Tree | None, prefix: str = "") -> State:
    """A git tree as helpers.tree_state describes a work tree (files and symlinks only)."""
    out: State = {}
    if tree is None:
        return out
    for entry in tree:
        path = prefix + entry.name
        if entry.filemode == FileMode.TREE:
            out.update(tree_files(repo, repo[entry.id], path + "/"))  # type: ignore[arg-type]
        elif entry.filemode == FileMode.LINK:
            out[path] = ("link", os.fsdecode(repo[entry.id].data))
        elif entry.filemode in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE):
            out[path] = ("file", repo[entry.id].data, entry.filemode == FileMode.BLOB_EXECUTABLE)
    return out


def fsck_problems(repo_root: Path) -> list[str]:
    """`git fsck --full` lines that are not mere dangling objects (those are normal)."""
    from helpers import git_run

    done = git_run(repo_root, "fsck", "--full", "--no-progress")
    lines = [
        line
        for line in (done.stdout + done.stderr).splitlines()
        if line.strip() and not line.startswith(("dangling ", "Checking ", "notice:"))
    ]
    if done.returncode != 0:
        lines.append(f"exit code {done.returncode}")
    return lines


# ---- a real server driven from synchronous code (hypothesis tests are synchronous) -------


@dataclass
class Answer:
    """A JSON-RPC answer: a result, or an error with code, message and data."""

    result: Any = None
    code: int | None = None
    message: str = ""
    data: Any = None

    @property
    def ok(self) -> bool:
        return self.code is None


class ServerThread:
    """A turnback server process whose client runs on an event loop in its own thread."""

    def __init__(self, root: Path, **settings_: Any) -> None:
        self.root = root
        self.settings = settings_
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = None
        self.starts = 0
        self.start()

    def _run(self, coro: Coroutine, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> None:
        async def go():
            client = await SERVER_CONFIG.start()
            await open_session(client, self.root, **self.settings)
            return client

        self.client = self._run(go(), 60)
        self.starts += 1

    def stop(self) -> None:
        client, self.client = self.client, None
        if client is None:
            return

        async def go():
            try:
                await asyncio.wait_for(client.shutdown_session(), 20)
            finally:
                await client.stop()

        self._run(go(), 60)

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        try:
            self.stop()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            self.loop.close()

    def alive(self) -> bool:
        server = getattr(self.client, "_server", None)
        return server is not None and server.returncode is None

    def call(self, method: str, params: Any, timeout: float = 60.0) -> Answer:
        """One request; a hang raises TimeoutError (asyncio.wait_for around the request)."""
        client = self.client
        assert client is not None

        async def go():
            return await asyncio.wait_for(
                client.protocol.send_request_async(method, params), timeout
            )

        try:
            return Answer(result=plain(self._run(go(), timeout + 5)))
        except JsonRpcException as error:
            return Answer(code=error.code, message=str(error.message), data=plain(error.data))


def plain(value: Any) -> Any:
    """Deeply plain JSON: pygls may hand back namedtuples anywhere in a value."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# ---- a raw JSON-RPC client: any bytes, any params, no client-side validation -------------


class RawServer:
    """`turnback serve` over pipes, spoken to frame by frame.

    pytest-lsp validates what it sends against the LSP types, so it cannot send junk to
    standard methods; this client sends any bytes. Requests from the server (configuration,
    progress tokens, lens refreshes, applyEdit) are answered with null, as a minimal editor
    would. Every frame the server sends is kept in `received`.
    """

    def __init__(
        self, root: Path, initialize: bool = True, capabilities: dict | None = None
    ) -> None:
        import subprocess
        import sys

        from helpers import SERVER_ENV

        self.root = root
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "turnback", "serve"],
            cwd=root,
            env=SERVER_ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.received: list[Any] = []
        self.unparsable: list[bytes] = []
        #: Requests from the server left unanswered (a client that never answers them).
        self.unanswered: set[str] = set()
        #: Requests from the server answered with this error object instead of null.
        self.refused: dict[str, dict] = {}
        self._cond = threading.Condition()
        self._ids = 1000
        self.stderr_tail: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        if initialize:
            answer = self.request(
                "initialize",
                {
                    "processId": None,
                    "rootUri": root.as_uri(),
                    "capabilities": capabilities or {},
                    "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                },
                timeout=60,
            )
            assert "result" in answer, answer
            self.notify("initialized", {})

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail = (self.stderr_tail + [line])[-200:]

    def _read(self) -> None:
        import json

        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = stream.read(length or 0)
            try:
                message = json.loads(body)
            except ValueError:
                self.unparsable.append(body)
                continue
            asked = isinstance(message, dict) and "method" in message and "id" in message
            if asked and message["method"] in self.refused:
                error = self.refused[message["method"]]
                self.write({"jsonrpc": "2.0", "id": message["id"], "error": error})
            elif asked and message["method"] not in self.unanswered:
                self.write({"jsonrpc": "2.0", "id": message["id"], "result": None})
            with self._cond:
                self.received.append(message)
                self._cond.notify_all()

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    @staticmethod
    def frame(body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def write(self, message: Any) -> None:
        import json

        self.send(self.frame(json.dumps(message).encode()))

    def next_id(self) -> int:
        self._ids += 1
        return self._ids

    def wait_response(self, msg_id: Any, timeout: float) -> dict | None:
        """The response with this id, or None if none came within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for message in self.received:
                    if (
                        isinstance(message, dict)
                        and message.get("id") == msg_id
                        and "method" not in message
                    ):
                        return message
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self._cond.wait(min(left, 0.2))

    def request(self, method: str, params: Any = None, timeout: float = 30.0) -> dict:
        """Sends a request; returns the response, or raises TimeoutError (a hang)."""
        msg_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not _ABSENT:
            message["params"] = params
        self.write(message)
        answer = self.wait_response(msg_id, timeout)
        if answer is None:
            raise TimeoutError(f"no answer to {method} within {timeout} s")
        return answer

    def notify(self, method: str, params: Any) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        import subprocess

        if self.alive():
            try:
                self.request("shutdown", None, timeout=10)
                self.notify("exit", None)
                self.proc.wait(10)
            except (TimeoutError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)


#: Sentinel: send a request with no "params" member at all.
_ABSENT = object()
ABSENT = _ABSENT
