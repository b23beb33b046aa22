"""Decides which untracked paths a snapshot leaves out, and why.

Tracked files are always captured. Untracked ones are captured unless ignored,
too large, inside an untracked directory with an excluded name or too many
files, or inside a nested repository; every such decision is made once per
capture and cached, because one directory decides for all its files.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pygit2

from ..config import Settings
from ..core.gitpaths import path_is_ignored
from ..core.worktree import holds_repository, is_git_directory
from ..errors import WorkspaceTooLarge

TOO_LARGE = "tooLarge"
TOO_MANY_FILES = "tooManyFiles"
EXCLUDED_DIRECTORY = "excludedDirectory"
NESTED_REPOSITORY = "nestedRepository"
#: A FIFO, socket or device: never opened (reading a FIFO would block), never captured.
SPECIAL_FILE = "specialFile"
#: A submodule: the snapshot keeps the commit your index records, not its files.
SUBMODULE = "submodule"
#: A directory (or a path below one) turnback may not list: what is there is not known,
#: so a restore neither writes nor deletes anything there.
UNREADABLE = "unreadable"
#: A name git refuses to keep (`git~1`, `.git.`: another name of `.git` on Windows or macOS).
INVALID_PATH = "invalidPath"


def is_special(st: os.stat_result) -> bool:
    """Neither a regular file, a symlink nor a directory: a FIFO, socket or device."""
    mode = st.st_mode
    return not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode))


def is_below(path: str, folders: list[str]) -> bool:
    """Whether `path` lies inside one of `folders` (work-tree paths)."""
    return any(path.startswith(f"{folder}/") for folder in folders)


def too_deep(root: Path, message: str) -> WorkspaceTooLarge:
    """libgit2's walk stops at a fixed depth ("directory nesting too deep (100)") and then
    fails the whole scan, every time: a refusal naming the folder to ignore, not a retry."""
    found = re.search(r"\((\d+)\)", message)
    limit = int(found.group(1)) if found else 100
    where = _too_deep_under(root, limit)
    named = f"{where}/ holds folders" if where else "Folders"
    return WorkspaceTooLarge(
        f"Capture stopped: {named} nested more than {limit} deep, past what libgit2 (the "
        f"git library turnback uses) walks. Ignore {where or 'them'} in .gitignore. Nothing "
        "was recorded.",
        depth=limit,
    )


def _too_deep_under(root: Path, limit: int) -> str | None:
    """The top folder of the work tree holding a folder `limit` levels deep (no `.git`
    entered, no symlink followed); None if none is found."""
    stack = [(str(root), 0, "")]
    while stack:
        folder, depth, top = stack.pop()
        if depth >= limit:
            return top
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name != ".git" and entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, depth + 1, top or entry.name))
        except OSError:
            continue
    return None


def too_many_files(count: int, limit: int) -> WorkspaceTooLarge:
    return WorkspaceTooLarge(
        f"Capture stopped: the snapshot would hold more than {limit:,} files (found {count:,} "
        "so far). Is the workspace folder the project (not a home directory)? Ignore bulk "
        "data in .gitignore, or raise the snapshotFileLimit setting. Nothing was recorded.",
        files=count,
        limit=limit,
    )


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str
    #: A left-out directory's device and inode ("dev:ino"): a directory keeps them when it
    #: is renamed, so an undo can tell its files from ones the turn made (restore).
    identity: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, str]:
        out = {"path": self.path, "reason": self.reason}
        if self.identity is not None:
            out["dirId"] = self.identity
        return out


def directory_identity(full: Path | str) -> str | None:
    """A directory's "dev:ino", which a rename keeps; None when it cannot be read."""
    try:
        st = os.lstat(full)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}" if stat.S_ISDIR(st.st_mode) else None


#: A verdict: None (capture it), IGNORED (leave it out silently) or a Skipped to report.
IGNORED = Skipped("", "ignored")


class UntrackedPolicy:
    """Verdicts for untracked paths during one capture.

    `tracked_dir(d)` says whether the user's index tracks anything under `d`;
    in a plain folder nothing is tracked, so the directory file-count limit
    would apply to the whole tree: there only names and sizes are checked.
    """

    def __init__(
        self,
        root: Path,
        repo: pygit2.Repository,
        settings: Settings,
        tracked_dir: Callable[[str], bool],
        plain_folder: bool,
        is_submodule: Callable[[str], bool] = lambda _path: False,
    ) -> None:
        self.root = root
        self.repo = repo
        self.settings = settings
        self.tracked_dir = tracked_dir
        self.plain_folder = plain_folder
        self.is_submodule = is_submodule
        self._excluded = set(settings.excluded_directories)
        self._dir_verdicts: dict[str, Skipped | None] = {}
        #: Files found by walks; a runaway walk (a home directory) stops at the snapshot limit.
        self.walked = 0

    def ignored(self, path: str) -> bool:
        return path_is_ignored(self.repo, path)

    def _top_untracked_dir(self, parts: list[str]) -> int | None:
        """Index in `parts` of the shallowest untracked ancestor directory, if any."""
        for depth in range(1, len(parts)):
            if not self.tracked_dir("/".join(parts[:depth])):
                return depth
        return None

    def dir_verdict(self, rel_dir: str) -> Skipped | None:
        """Verdict for an untracked directory, from its own name and its ancestors'."""
        if rel_dir in self._dir_verdicts:
            return self._dir_verdicts[rel_dir]
        parts = rel_dir.split("/")
        verdict: Skipped | None = None
        if len(parts) > 1:
            verdict = self.dir_verdict("/".join(parts[:-1]))
        if verdict is None and (self.plain_folder or not self.tracked_dir(rel_dir)):
            if parts[-1] in self._excluded:
                identity = directory_identity(self.root / rel_dir)
                verdict = Skipped(rel_dir, EXCLUDED_DIRECTORY, identity)
            elif holds_repository(self.root / rel_dir):
                reason = SUBMODULE if self.is_submodule(rel_dir) else NESTED_REPOSITORY
                verdict = Skipped(rel_dir, reason)
            elif is_git_directory(self.root / rel_dir):  # a bare repository, say origin.git
                verdict = Skipped(rel_dir, NESTED_REPOSITORY)
            elif not self.plain_folder:
                top = self._top_untracked_dir(parts + ["x"])
                if top is not None and "/".join(parts[:top]) == rel_dir:
                    limit = self.settings.untracked_dir_file_limit
                    if self.count_files(rel_dir, limit + 1) > limit:
                        identity = directory_identity(self.root / rel_dir)
                        verdict = Skipped(rel_dir, TOO_MANY_FILES, identity)
        self._dir_verdicts[rel_dir] = verdict
        return verdict

    def file_verdict(self, path: str, st: os.stat_result | None = None) -> Skipped | None:
        """Verdict for one untracked file (regular file or symlink)."""
        if self.ignored(path):
            return IGNORED
        parent = path.rpartition("/")[0]
        if parent and (verdict := self.dir_verdict(parent)) is not None:
            return verdict
        if st is None:
            try:
                st = os.lstat(self.root / path)
            except OSError:
                return IGNORED
        if stat.S_ISREG(st.st_mode) and st.st_size > self.settings.untracked_file_size_limit:
            return Skipped(path, TOO_LARGE)
        if is_special(st):
            return Skipped(path, SPECIAL_FILE)
        if stat.S_ISDIR(st.st_mode):
            return IGNORED
        return None

    def _listing(self, rel_dir: str) -> list[tuple[str, os.DirEntry[str]]]:
        """A directory's entries with their work-tree paths; nothing when it is unreadable."""
        try:
            return [(f"{rel_dir}/{e.name}", e) for e in os.scandir(self.root / rel_dir)]
        except OSError:
            return []

    def walk(self, rel_dir: str) -> tuple[list[str], list[Skipped]]:
        """Files to capture under an untracked directory, and what was left out of it."""
        captured: list[str] = []
        skipped: list[Skipped] = []
        if (verdict := self.dir_verdict(rel_dir)) is not None:
            return captured, [verdict]
        stack = [rel_dir]
        while stack:
            for rel, entry in self._listing(stack.pop()):
                if entry.name == ".git":
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if self.ignored(rel + "/"):
                        continue
                    if (verdict := self.dir_verdict(rel)) is not None:
                        skipped.append(verdict)
                    else:
                        stack.append(rel)
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue  # deleted since the listing: as if it had never been there
                verdict = self.file_verdict(rel, st)
                if verdict is None:
                    captured.append(rel)
                    self.walked += 1
                    if self.walked > self.settings.snapshot_file_limit:
                        raise too_many_files(self.walked, self.settings.snapshot_file_limit)
                elif verdict is not IGNORED:
                    skipped.append(verdict)
        return captured, skipped

    def count_files(self, rel_dir: str, stop_at: int) -> int:
        """Files that would be captured under `rel_dir`, counting no further than `stop_at`."""
        count = 0
        stack = [rel_dir]
        while stack and count < stop_at:
            for rel, entry in self._listing(stack.pop()):
                if entry.is_dir(follow_symlinks=False):
                    if (
                        entry.name not in self._excluded
                        and not self.ignored(rel + "/")
                        and not holds_repository(self.root / rel)
                        and not is_git_directory(self.root / rel)
                    ):
                        stack.append(rel)
                elif not self.ignored(rel):
                    count += 1
                    if count >= stop_at:
                        break
        return count


def within_limits(
    index: pygit2.Index,
    paths: list[str],
    settings: Settings,
    skipped: dict[str, Skipped],
    root: str,
) -> list[tuple[str, os.stat_result]]:
    """The files to hash with their stat, or WorkspaceTooLarge before anything is written."""
    count = len(index) + sum(path not in index for path in paths)
    if count > settings.snapshot_file_limit:
        raise too_many_files(count, settings.snapshot_file_limit)
    found: list[tuple[str, os.stat_result]] = []
    total = 0
    for path in paths:
        try:
            st = os.lstat(os.path.join(root, path))
        except OSError:
            st = None
        if st is None or not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            if path in index:
                index.remove(path)
            if st is not None and is_special(st):
                skipped[path] = Skipped(path, SPECIAL_FILE)
            continue
        total += st.st_size
        found.append((path, st))
    if total > settings.capture_byte_limit:
        raise WorkspaceTooLarge(
            f"Capture stopped: it would write {total:,} bytes of new content (limit "
            f"{settings.capture_byte_limit:,}, the captureByteLimit setting). Ignore large "
            "data in .gitignore or raise the limit. Nothing was recorded.",
            bytes=total,
            limit=settings.capture_byte_limit,
        )
    return found
