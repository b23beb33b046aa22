"""`turnback daemon` and the light client, as real processes on real repositories.

Which path a capture took is read from the daemon's log, which names the pid of
every client it served (SO_PEERCRED), never from timing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import (
    SERVER_ENV,
    cli_json,
    git,
    git_run,
    list_turns,
    start_server,
    tree_state,
    wait_for,
    write,
)
from turnback.daemon import client
from turnback.daemon.paths import SOCKET_NAME

DAEMON_ENV = {**SERVER_ENV, "TURNBACK_DAEMON": "on"}

# The daemon is Linux's (SO_PEERCRED); the portable run stands in for macOS and Windows,
# where hooks capture in process (tests/test_native.py checks that it is off there).
pytestmark = pytest.mark.skipif(
    not client.available(), reason="no daemon on this platform (or TURNBACK_PORTABLE=1)"
)


def daemon_dir(repo: Path) -> Path:
    return repo / ".git" / "turnback" / "daemon"


def daemon_log(repo: Path) -> str:
    log = daemon_dir(repo) / "log"
    return log.read_text() if log.exists() else ""


def daemon_pid(repo: Path) -> int | None:
    """The pid in the daemon's lock file, if that process is alive."""
    try:
        pid = int((daemon_dir(repo) / "lock").read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def wait_warm(repo: Path, pid: int | None = None) -> int:
    """Waits until a daemon (`pid`, or any) has done its first full scan; returns its pid."""
    wait_for(
        lambda: (
            daemon_pid(repo) is not None
            and (pid is None or daemon_pid(repo) == pid)
            and f"warm (pid {daemon_pid(repo)})" in daemon_log(repo)
        ),
        what="a warm daemon",
    )
    return daemon_pid(repo)  # type: ignore[return-value]


def start_daemon(repo: Path, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "turnback", "daemon", "-C", str(repo)],
        env={**DAEMON_ENV, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.fixture
def stop_daemons(repo: Path):
    """Ends every daemon this test left on `repo` (by the pid in its lock file)."""
    yield
    pid = daemon_pid(repo)
    if pid is not None:
        os.kill(pid, signal.SIGKILL)


def capture(repo: Path, *args: str, env: dict | None = None) -> tuple[int, dict, str]:
    """`turnback capture --json ARGS` as a hook runs it: (its pid, its JSON, its stderr)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "turnback", "capture", "--json", *args],
        cwd=repo,
        env=env or DAEMON_ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = process.communicate(timeout=60)
    return process.pid, json.loads(out), err


def served(repo: Path, pid: int) -> bool:
    return f"snapshot/capture from pid {pid}\n" in daemon_log(repo)


# Proves the first capture runs in process and leaves a daemon behind, which serves the next.
def test_first_capture_starts_a_daemon_that_serves_the_next(repo: Path, stop_daemons):
    first_pid, first, _ = capture(repo, "--label", "one")
    assert first["turn"] == 1
    daemon = wait_warm(repo)
    assert not served(repo, first_pid)
    write(repo, "src/app.py", "print('agent')\n")
    second_pid, second, _ = capture(repo, "--label", "two")
    assert served(repo, second_pid)
    assert daemon_pid(repo) == daemon  # the same daemon, not a second one
    assert (second["turn"], second["label"], second["session"]) == (2, "two", "default")
    git_tree = git(repo, "ls-tree", "-r", second["id"], "src/app.py")
    assert git_tree.split()[2] == git(repo, "hash-object", "src/app.py").strip()


# Proves a capture through the daemon is the in-process one: result shape, sessions, errors.
def test_daemon_capture_equals_in_process_capture(repo: Path, stop_daemons):
    start_daemon(repo)
    wait_warm(repo)
    off = {**DAEMON_ENV, "TURNBACK_DAEMON": "off"}
    _, local, _ = capture(repo, "--session", "s1", "--label", "a", env=off)
    pid, remote, _ = capture(repo, "--label", "b", "--metadata", '{"k": [1, "x"]}')
    assert served(repo, pid)
    assert remote["session"] == "s1"  # the session most recently captured into, as in process
    assert set(remote) == set(local)
    assert remote["metadata"] == {"k": [1, "x"]} and remote["turn"] == 2
    pid, sealed, _ = capture(repo, "--phase", "after")
    assert served(repo, pid) and sealed["sealed"] and "sealedAt" in sealed
    results = []
    for env in (DAEMON_ENV, off):  # the same error, the same exit status, either way
        done = subprocess.run(
            [sys.executable, "-m", "turnback", "capture", "--json", "--session", "new"]
            + ["--phase", "after"],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        results.append((done.returncode, json.loads(done.stdout)))
    assert results[0] == results[1]
    assert results[0][0] == 1 and results[0][1]["error"]["data"]["reason"] == "noOpenTurn"


# Proves a hook's process answered by the daemon never imports pygit2 (nor does --help).
def test_client_side_imports_nothing_heavy(repo: Path, stop_daemons):
    start_daemon(repo)
    wait_warm(repo)
    for args in (["--help"], ["capture", "--label", "light"]):
        process = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "turnback", *args],
            cwd=repo,
            env=DAEMON_ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        imported = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines()}
        assert not {"pygit2", "pygls", "turnback.engine"} & imported, args
    assert out.startswith("Turn 1 ") and served(repo, process.pid)


# Proves the socket is 0600 in a 0700 directory, and another user's socket is never used.
def test_socket_of_another_user_is_refused(repo: Path, stop_daemons):
    start_daemon(repo)
    daemon = wait_warm(repo)
    sock = daemon_dir(repo) / SOCKET_NAME
    assert sock.stat().st_mode & 0o777 == 0o600
    assert daemon_dir(repo).stat().st_mode & 0o777 == 0o700
    os.chown(sock, 65534, 65534)
    no_start = {**DAEMON_ENV, "TURNBACK_DAEMON": "no-start"}
    pid, result, _ = capture(repo, "--label", "not through a stranger's socket", env=no_start)
    assert result["turn"] == 1
    assert not served(repo, pid)
    assert daemon_pid(repo) == daemon  # the running daemon kept its lock; no second one
    os.chown(sock, 0, 0)
    os.chmod(daemon_dir(repo), 0o755)  # a directory others can enter is not private either
    pid, _, _ = capture(repo, "--label", "not through an open directory", env=no_start)
    assert not served(repo, pid)


# Proves a stale socket (its daemon gone) is refused, then replaced by a new daemon.
def test_stale_socket_is_replaced(repo: Path, stop_daemons):
    daemon_dir(repo).mkdir(parents=True, mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(daemon_dir(repo) / SOCKET_NAME))
    stale.close()  # the file stays; nobody listens
    pid, first, _ = capture(repo, "--label", "one")
    assert first["turn"] == 1
    wait_warm(repo)
    assert "replaced a stale socket" in daemon_log(repo)
    pid, second, _ = capture(repo, "--label", "two")
    assert served(repo, pid) and second["turn"] == 2


# Proves the daemon exits after its idle time (git config setting), and removes its socket.
def test_idle_exit(repo: Path, stop_daemons):
    git(repo, "config", "turnback.daemonIdleTimeout", "1")
    process = start_daemon(repo)
    wait_warm(repo)
    pid, _, _ = capture(repo, "--label", "one")
    assert served(repo, pid)
    assert process.wait(timeout=30) == 0
    assert "idle for 1 s: exiting" in daemon_log(repo)
    assert not (daemon_dir(repo) / SOCKET_NAME).exists()


# Proves a daemon whose state was deleted (`rm -rf .git/turnback`: its socket and lock file
# gone) exits within seconds, writing nothing back, rather than watch the tree, unreachable,
# until its idle time.
def test_daemon_exits_when_its_socket_is_gone(repo: Path, stop_daemons):
    process = start_daemon(repo)
    wait_warm(repo)
    shutil.rmtree(repo / ".git" / "turnback")
    assert process.wait(timeout=30) == 0  # the idle timeout is the default 300 s
    assert not (repo / ".git" / "turnback").exists()  # its scan cache was not saved back
    pid, result, _ = capture(repo, "--label", "after")  # a new daemon starts as usual
    assert result["turn"] == 1 and not served(repo, pid)
    wait_warm(repo)  # the new daemon, for `stop_daemons` to find


# Proves only one daemon runs per work tree: a second one exits at once.
def test_one_daemon_per_work_tree(repo: Path, stop_daemons):
    start_daemon(repo)
    first = wait_warm(repo)
    second = start_daemon(repo)
    assert second.wait(timeout=30) == 0
    assert daemon_pid(repo) == first
    said = second.stderr.read().decode()  # type: ignore[union-attr]
    assert f"a daemon (pid {first}) already serves" in said  # it exited without a word


# Proves a daemon refused a folder says why on stderr, before it makes anything for it:
# `daemon -C /` exited 1 with nothing said (the reason only in a log in a folder it made),
# and a missing folder was exit 1, where every other command's -C is bad input (2).
def test_a_refused_daemon_says_why(tmp_path: Path):
    root = subprocess.run(
        [sys.executable, "-m", "turnback", "daemon", "-C", "/"],
        env=DAEMON_ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert root.returncode == 1 and "cannot be a workspace" in root.stderr
    assert not list((Path(DAEMON_ENV["TURNBACK_DATA_DIR"]) / "shadows").glob("root-*/daemon"))
    missing = subprocess.run(
        [sys.executable, "-m", "turnback", "daemon", "-C", str(tmp_path / "nowhere")],
        env=DAEMON_ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert missing.returncode == 2 and "is not a directory" in missing.stderr


# Proves a daemon SIGKILLed at each durable step (warm-up and capture) leaves every capture right.
def test_daemon_killed_mid_capture(repo: Path, stop_daemons):
    killed_mid_capture = 0
    no_start = {**DAEMON_ENV, "TURNBACK_DAEMON": "no-start"}
    for step in range(1, 10):
        write(repo, "src/app.py", f"print({step})\n")
        process = start_daemon(repo, TURNBACK_FAULT_AFTER=str(step))
        wait_for(
            lambda p=process: p.poll() is not None or f"warm (pid {p.pid})" in daemon_log(repo),
            what="the daemon to warm up or die",
        )
        turns = len(cli_json(repo, "list")["turns"])
        pid, result, _ = capture(repo, "--label", f"step {step}", env=no_start)
        time.sleep(0.2)
        survived = process.poll() is None
        if not survived and served(repo, pid):
            assert process.returncode == -signal.SIGKILL
            killed_mid_capture += 1
        # The hook's capture holds the work tree as it is, whichever way it went.
        assert git(repo, "show", f"{result['id']}:src/app.py") == f"print({step})\n"
        listing = cli_json(repo, "list")["turns"]
        assert listing[0]["label"] == f"step {step}"
        assert len(listing) in (turns + 1, turns + 2)  # +2: killed after its commit point
        fsck = git_run(repo, "fsck", "--full", "--no-dangling")
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
        if survived:
            assert served(repo, pid)
            process.terminate()
            process.wait(timeout=30)
            break
    else:
        raise AssertionError("the daemon never survived a capture")
    assert killed_mid_capture >= 1


# Proves an editor's server, the daemon and CLI processes share one repository correctly.
async def test_editor_server_daemon_and_cli_at_once(repo: Path, stop_daemons):
    start_daemon(repo)
    wait_warm(repo)
    off = {**DAEMON_ENV, "TURNBACK_DAEMON": "off"}
    async with start_server(repo) as client:
        hooks = []
        for i in range(6):
            write(repo, f"work/{i}.txt", f"{i}\n")
            env = DAEMON_ENV if i % 2 == 0 else off
            hooks.append(
                subprocess.Popen(
                    [sys.executable, "-m", "turnback", "capture", "--json", "--label", f"h{i}"],
                    cwd=repo,
                    env=env,
                    stdout=subprocess.PIPE,
                    text=True,
                )
            )
            await client.protocol.send_request_async("snapshot/capture", {"label": f"e{i}"})
        pids = []
        for hook in hooks:
            out, _ = hook.communicate(timeout=60)
            assert hook.returncode == 0
            pids.append((hook.pid, json.loads(out)))
        listing = await list_turns(client)
    labels = sorted(t["label"] for t in listing["turns"])
    assert labels == sorted([f"h{i}" for i in range(6)] + [f"e{i}" for i in range(6)])
    assert len({t["turn"] for t in listing["turns"]}) == 12
    assert all(served(repo, pid) == (i % 2 == 0) for i, (pid, _) in enumerate(pids))
    state = tree_state(repo)
    newest = max(listing["turns"], key=lambda t: t["turn"])
    for rel, entry in state.items():
        if rel.startswith("work/"):
            assert git(repo, "show", f"{newest['id']}:{rel}").encode() == entry[1]
    fsck = git_run(repo, "fsck", "--full", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr


# Proves the daemon itself refuses a process of another uid that reaches its socket.
def test_daemon_refuses_another_uid(repo: Path, stop_daemons):
    start_daemon(repo)
    wait_warm(repo)
    sock = daemon_dir(repo) / SOCKET_NAME
    public = Path(tempfile.mkdtemp(prefix="turnback-peer-"))  # a path uid 65534 can walk
    public.chmod(0o755)
    try:
        os.link(sock, public / "sock")  # the same socket inode, reachable from outside
        sock.chmod(0o666)
        stranger = subprocess.run(
            [_system_python(), "-c", _STRANGER, str(public / "sock")],
            user=65534,
            group=65534,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        sock.chmod(0o600)
        shutil.rmtree(public)
    assert stranger.returncode == 0, stranger.stderr
    assert stranger.stdout.strip() == "closed without an answer"
    assert "refused a connection from uid 65534" in daemon_log(repo)


_STRANGER = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
body = b'{"jsonrpc": "2.0", "id": 1, "method": "snapshot/list", "params": {}}'
s.settimeout(20)
try:
    s.sendall(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
    print("answered" if s.recv(65536) else "closed without an answer")
except (BrokenPipeError, ConnectionResetError):
    print("closed without an answer")
"""


def _system_python() -> str:
    """A Python that uid 65534 may run (the test's own lives under /root)."""
    found = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if found is None:
        pytest.skip("no system python3 for the other user")
    return found


# Proves a plain folder (no git) gets its daemon in its shadow repository's directory.
def test_plain_folder_daemon(tmp_path: Path):
    folder = tmp_path / "plain"
    write(folder, "notes.txt", "v1\n")
    capture(folder, "--label", "one")
    shadows = Path(SERVER_ENV["TURNBACK_DATA_DIR"]) / "shadows"
    [home] = [p for p in shadows.iterdir() if (p / "workdir").read_text() == f"{folder}\n"]
    log = home / "daemon" / "log"
    wait_for(lambda: log.exists() and "warm (pid" in log.read_text(), what="the daemon")
    pid = int((home / "daemon" / "lock").read_text())
    try:
        write(folder, "notes.txt", "v2\n")
        client_pid, second, _ = capture(folder, "--label", "two")
        assert f"snapshot/capture from pid {client_pid}\n" in log.read_text()
        assert second["turn"] == 2
        assert not (folder / ".git").exists()
    finally:
        os.kill(pid, signal.SIGKILL)


def _frames(sock: socket.socket, count: int) -> list[dict]:
    """Reads `count` framed JSON messages from the daemon (a closed connection fails)."""
    buffer, out = b"", []

    def more() -> bytes:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the daemon closed the connection")
        return chunk

    while len(out) < count:
        while b"\r\n\r\n" not in buffer:
            buffer += more()
        header, _, buffer = buffer.partition(b"\r\n\r\n")
        length = int(header.split(b":")[1])
        while len(buffer) < length:
            buffer += more()
        out.append(json.loads(buffer[:length]))
        buffer = buffer[length:]
    return out


def _send(sock: socket.socket, body: bytes) -> None:
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)


# Proves the socket speaks the server's JSON-RPC: its errors, its lifecycle refusals, and
# two connections using the same id each get their own answer.
def test_socket_protocol(repo: Path, stop_daemons):
    start_daemon(repo)
    wait_warm(repo)
    first, second = (socket.socket(socket.AF_UNIX) for _ in range(2))
    for sock in (first, second):
        sock.settimeout(30)
        sock.connect(str(daemon_dir(repo) / SOCKET_NAME))
    _send(first, b"{not json")
    _send(first, b'{"jsonrpc": "2.0", "id": 7, "method": "shutdown"}')
    _send(second, b'{"jsonrpc": "2.0", "id": 1, "method": "snapshot/list", "params": {"limit": 0}}')
    _send(first, b'{"jsonrpc": "2.0", "id": 1, "method": "snapshot/list", "params": {}}')
    bad_json, refused, listed = _frames(first, 3)
    [invalid] = _frames(second, 1)
    assert bad_json["id"] is None and bad_json["error"]["code"] == -32700
    assert refused["id"] == 7 and refused["error"]["code"] == -32600
    assert listed["id"] == 1 and listed["result"]["workTree"] == repo.as_uri()
    assert invalid["id"] == 1 and invalid["error"]["code"] == -32602
    assert invalid["error"]["data"] == {"field": "limit"}
    first.close()
    second.close()
    assert daemon_pid(repo) is not None  # still serving


@contextlib.contextmanager
def _capture_asked_while_locked(repo: Path) -> Iterator[socket.socket]:
    """A hook's connection whose capture the daemon took and waits to run: the repository
    lock is held until the block ends."""
    import fcntl

    lock = os.open(repo / ".git" / "turnback" / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        hook = socket.socket(socket.AF_UNIX)
        hook.settimeout(30)
        hook.connect(str(daemon_dir(repo) / SOCKET_NAME))
        request = {"jsonrpc": "2.0", "id": 1, "method": "snapshot/capture", "params": {}}
        _send(hook, json.dumps(request).encode())
        wait_for(lambda: "snapshot/capture from pid" in daemon_log(repo), what="the request")
        yield hook
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)


# Proves a capture whose client hung up while it waited for the repository lock (a hook
# that gave up at its deadline and said the turn was not recorded) records nothing once
# the lock is free, rather than a late turn that would then look "running".
def test_capture_of_a_client_that_hung_up_is_not_recorded(repo: Path, stop_daemons):
    start_daemon(repo)
    wait_warm(repo)
    assert cli_json(repo, "list")["turns"] == []
    with _capture_asked_while_locked(repo) as hook:  # an undo holding the repository
        hook.close()  # the hook's deadline
        time.sleep(0.5)
    wait_for(lambda: "answered snapshot/capture" in daemon_log(repo), what="the capture's end")
    assert cli_json(repo, "list")["turns"] == []
    assert capture(repo, "--label", "next")[1]["turn"] == 1  # still serving


# Proves a daemon told to stop (SIGTERM: a shutdown, a logout) while a capture is under way
# answers it before it exits: it recorded the turn and dropped the answer, and the client,
# seeing the connection close, captured again in process: two turns for one prompt.
def test_a_daemon_stopped_mid_capture_answers_it(repo: Path, stop_daemons):
    daemon = start_daemon(repo)
    wait_warm(repo)
    with _capture_asked_while_locked(repo) as hook:  # the capture waits meanwhile
        daemon.send_signal(signal.SIGTERM)
        time.sleep(0.5)
    [answer] = _frames(hook, 1)
    hook.close()
    assert answer["result"]["turn"] == 1
    assert daemon.wait(timeout=30) == 0
    assert [t["turn"] for t in cli_json(repo, "list")["turns"]] == [1]


# Proves a directory standing where the daemon's socket goes is set aside (never deleted)
# and the daemon serves, instead of crashing at every start while hooks fall back.
def test_directory_in_the_sockets_place(repo: Path, stop_daemons):
    cli_json(repo, "capture", "--label", "warm")
    in_the_way = daemon_dir(repo) / SOCKET_NAME
    write(repo, f".git/turnback/daemon/{SOCKET_NAME}/kept.txt", "someone's\n")
    start_daemon(repo)
    wait_warm(repo)
    pid, turn, _err = capture(repo, "--label", "through the daemon")
    assert served(repo, pid) and turn["turn"] == 2
    [aside] = daemon_dir(repo).glob(f"{SOCKET_NAME}.in-the-way-*")
    assert (aside / "kept.txt").read_text() == "someone's\n" and in_the_way.is_socket()


# Proves a daemon of another turnback version (one left running across an upgrade) serves
# no client of this version: it kept serving the new CLI and hooks with the old code for as
# long as they came within its idle timeout. The capture runs in process instead.
def test_a_daemon_of_another_version_serves_no_client(repo: Path, tmp_path: Path, stop_daemons):
    import turnback

    older = tmp_path / "older"
    shutil.copytree(Path(turnback.__file__).parent, older / "turnback")
    init = older / "turnback" / "__init__.py"
    init.write_text(init.read_text().replace(turnback.__version__, "0.0.1"))
    start_daemon(repo, PYTHONPATH=str(older))
    wait_warm(repo)
    assert (daemon_dir(repo) / "sock-0.0.1").is_socket()
    write(repo, "src/app.py", "print('agent')\n")
    no_start = {**DAEMON_ENV, "TURNBACK_DAEMON": "no-start"}  # (none left behind by the test)
    pid, turn, _err = capture(repo, "--label", "after the upgrade", env=no_start)
    assert turn["turn"] == 1 and not served(repo, pid)
