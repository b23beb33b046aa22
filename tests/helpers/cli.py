"""The real `turnback` command line, as another process sharing the server's storage."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .env import SERVER_ENV


def run_cli(
    root: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 60, **popen: Any
) -> subprocess.CompletedProcess:
    """`turnback <args>` in `root`: another process sharing the server's storage."""
    return subprocess.run(
        [sys.executable, "-m", "turnback", *args],
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
