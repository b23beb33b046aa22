"""The real `turnback` command line, as another process sharing the server's storage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .env import SERVER_ENV


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
