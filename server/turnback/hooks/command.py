"""The `turnback hooks install|uninstall|status` command: argument checks and printing."""

from __future__ import annotations

import sys
from pathlib import Path

from .harnesses import HARNESSES, find_harness
from .hookstate import work_tree
from .installer import install, status, uninstall

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def hooks_command(action: str, name: str | None, user: bool, workspace: str) -> int:
    """Runs one `turnback hooks` action; returns the CLI's exit code."""
    folder = Path(workspace)
    if not folder.is_dir():
        print(f"turnback: no such folder: {workspace}", file=sys.stderr)
        return EXIT_USAGE
    root = work_tree(str(folder))
    if action == "status":
        print("\n".join(status(root)))
        return EXIT_OK
    harness = find_harness(name) if name else None
    if harness is None:
        known = ", ".join(HARNESSES)
        what = f"unknown harness {name!r}" if name else "which harness?"
        print(f"turnback: {what} (one of: {known})", file=sys.stderr)
        return EXIT_USAGE
    report = (install if action == "install" else uninstall)(harness, root, user)
    stream = sys.stdout if report.ok else sys.stderr
    for line in report.lines:
        print(line, file=stream)
    started_here = _STARTED_HERE.get(harness.name) if action == "install" and not user else None
    if report.ok and started_here and folder.resolve() != root.resolve():
        print(
            f"Note: {started_here} reads the project config of the folder it is started "
            f"in: start it in {root} (not a subfolder), or install with --user for every "
            "folder.",
            file=sys.stderr,
        )
    return EXIT_OK if report.ok else EXIT_FAILED


#: Harnesses that read the project config only in the folder they start in (checked with
#: their binaries: Claude Code and Gemini CLI started in a subfolder ran no hooks).
_STARTED_HERE = {"claude-code": "Claude Code", "gemini": "Gemini CLI"}
