"""What git itself writes for the same changes: the storage baseline of the growth section.

A separate git directory borrows the base tree's objects through
`objects/info/alternates` (so they are never copied) and starts from the user's index
and HEAD; after each benchmark turn it runs `git add -A && git commit`, as a user
committing every turn would. What it wrote are its own loose objects; `git repack -d`
packs them, the same repack turnback's objects get, so the two growths compare like for
like. It borrows from the pristine source repository, not from the work tree's, where
turnback writes: `git repack -d` leaves out every object an alternate has in a pack, so
once turnback packs its captures, git's own growth would read as the few objects
turnback did not write (run r's 18 KB).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any


class GitCommitPerTurn:
    def __init__(self, work: Path, base_objects: Path, git_dir: Path, env: dict[str, str]) -> None:
        self.work = work
        self.base_objects = base_objects
        self.git_dir = git_dir
        self.env = env
        self.start_pack_bytes = 0

    def git(self, *args: str) -> str:
        return subprocess.run(
            ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.work}", *args],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    def start(self) -> None:
        shutil.rmtree(self.git_dir, ignore_errors=True)
        subprocess.run(["git", "init", "-q", "--bare", str(self.git_dir)], env=self.env, check=True)
        objects = self.base_objects.resolve()
        (self.git_dir / "objects" / "info" / "alternates").write_text(f"{objects}\n")
        shutil.copyfile(self.work / ".git" / "index", self.git_dir / "index")
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        self.git("update-ref", "HEAD", head)
        # The work tree as it stands (its untracked files too), committed and packed before
        # the first turn: turnback's first capture wrote those objects before the section
        # measured its own starting point, so git's growth leaves them out as well.
        self.commit_turn(-1)
        self.git("repack", "-d", "-q")
        self.start_pack_bytes = self.usage()["packBytes"]

    def commit_turn(self, turn: int) -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "--no-verify", "--allow-empty", "-m", f"turn {turn}")

    def usage(self) -> dict[str, Any]:
        objects = self.git_dir / "objects"
        loose = sum(
            f.stat().st_size
            for sub in objects.iterdir()
            if len(sub.name) == 2 and sub.is_dir()
            for f in sub.iterdir()
        )
        pack = objects / "pack"
        packs = sum(p.stat().st_size for p in pack.iterdir() if p.suffix in (".pack", ".idx"))
        return {"looseBytes": loose, "packBytes": packs}

    def finish(self) -> dict[str, Any]:
        """Bytes git wrote (loose), then after `git repack -d` (packed)."""
        before = self.usage()
        count = self.git("count-objects", "-v")
        # Before the work tree's own repack: objects already packed anywhere (the base,
        # through the alternates) are left out, the ones this repository wrote are packed.
        self.git("repack", "-d", "-q")
        after = self.usage()
        return {
            "looseGrowthBytes": before["looseBytes"],
            "repackGrowthBytes": after["packBytes"] - self.start_pack_bytes + after["looseBytes"],
            "countObjects": dict(line.split(": ", 1) for line in count.splitlines()),
        }
