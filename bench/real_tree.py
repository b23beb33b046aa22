"""A real source tree nobody generated: the Linux 6.1 sources of Debian's `linux-source-6.1`.

`apt-get install linux-source-6.1` puts /usr/src/linux-source-6.1.tar.xz (~78k files).
It is unpacked once under bench/.repos/ (gitignored), the Debian packaging's last
.gitignore rule (`/*`, "ignore everything at the top level") is dropped so the tree is
tracked as upstream tracks it, and it is committed; `BENCH_TREE=linux` runs the
benchmark's sections on a scratch copy of it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

from generate import GIT_ENV, REPOS_DIR

PACKAGE = "linux-source-6.1"
TARBALL = Path(f"/usr/src/{PACKAGE}.tar.xz")
DEBIAN_RULES = "#\n# Debian packaging: ignore everything at the top level"


def package_version() -> str:
    done = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", PACKAGE], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def linux_repo(log: Any = print) -> tuple[Path, dict[str, Any]]:
    """The cached, committed Linux tree (unpacked from the Debian package on first use)."""
    dest = REPOS_DIR / f"src-{PACKAGE}"
    stamp = REPOS_DIR / f"src-{PACKAGE}.json"
    if stamp.exists() and dest.is_dir():
        return dest, json.loads(stamp.read_text())
    if not (dest / ".git").is_dir():
        if not TARBALL.exists():
            raise SystemExit(f"{TARBALL} is missing: apt-get install -y {PACKAGE}")
        shutil.rmtree(dest, ignore_errors=True)
        log(f"unpacking {TARBALL} into {dest} ...")
        with tarfile.open(TARBALL) as tar:
            tar.extractall(REPOS_DIR, filter="tar")
        (REPOS_DIR / PACKAGE).rename(dest)
        gitignore = dest / ".gitignore"
        text = gitignore.read_text()
        if DEBIAN_RULES in text:
            gitignore.write_text(text[: text.index(DEBIAN_RULES)])
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", PACKAGE]):
            subprocess.run(["git", *args], cwd=dest, env=GIT_ENV, check=True)
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=dest, capture_output=True, check=True
    ).stdout.count(b"\0")
    stats = {
        "tree": "linux",
        "package": PACKAGE,
        "packageVersion": package_version(),
        "trackedFiles": files,
        "stampedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    stamp.write_text(json.dumps(stats, indent=1) + "\n")
    return dest, stats


def c_sources(tracked_lines: list[str]) -> list[str]:
    """Regular C files of the tree (`git ls-files -s` lines), the files an agent edits."""
    return sorted(
        line.split("\t", 1)[1]
        for line in tracked_lines
        if line.startswith("100644") and line.endswith(".c")
    )


def edit_c_file(data: bytes, tag: int) -> bytes:
    """An agent's edit of a C file: three lines changed in different places, one added."""
    lines = data.split(b"\n")
    for k in (len(lines) // 4, len(lines) // 2, 3 * len(lines) // 4):
        lines[k] = lines[k] + f" /* edited by the agent {tag} */".encode()
    lines.insert(len(lines) // 3, f"/* a line the agent added, edit {tag} */".encode())
    return b"\n".join(lines)
