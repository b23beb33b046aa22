"""The git CLI as the tests run it, and repositories made with it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .env import GIT_ENV
from .files import write


def git_run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The git CLI, its exit status and output left to the caller."""
    return subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=False
    )


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = git_run(cwd, *args)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def make_repo(root: Path, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, content in (files or {"README.md": "hello\n", "src/app.py": "print('v1')\n"}).items():
        write(root, rel, content)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root
