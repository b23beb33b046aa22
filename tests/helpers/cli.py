"""The real `turnback` command line, as another process sharing the server's storage."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .env import GIT_ENV, SERVER_ENV


def run_cli(
    root: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 60,
    wrap: tuple[str, ...] = (),
    **popen: Any,
) -> subprocess.CompletedProcess:
    """`turnback <args>` in `root` (under the `wrap` command, if any): another process
    sharing the server's storage."""
    return subprocess.run(
        [*wrap, sys.executable, "-m", "turnback", *args],
        cwd=root,
        env=SERVER_ENV if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **popen,
    )


def cli_json(root: Path, *args: str) -> dict:
    done = run_cli(root, *args, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def cli_syscalls(root: Path, syscalls: str, *args: str, timeout: float = 60) -> str:
    """`turnback <args>` under strace, threads followed and descriptors shown as paths: the
    trace of `syscalls` (mixed with the command's own stderr), once the command succeeded."""
    strace = ("strace", "-f", "-qq", "-y", "-e", f"trace={syscalls}")
    done = run_cli(root, *args, timeout=timeout, wrap=strace)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    return done.stderr


_DAC_CAPABILITIES = (1, 2, 3)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


def without_root_overrides() -> None:
    """In a child process (`preexec_fn`): drop the capabilities that let root ignore
    permissions, so a mode-555 directory refuses it as it refuses any user (tests run as
    root)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in _DAC_CAPABILITIES:
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def python_as_user(script: str) -> subprocess.CompletedProcess:
    """`python -c script` in a process that file permissions apply to (tests run as root),
    with the git environment of the tests."""
    return subprocess.run(
        [sys.executable, "-c", script],
        env=GIT_ENV,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=without_root_overrides,
    )
