"""Writes files into the work tree safely, and undoes its own writes on failure.

Every write goes to a temporary file and is renamed over the target, so a
reader sees the old or the new content, never half. The temporary file lives
in turnback's staging directory inside the git directory when that is on the
same file system (so the user's `git add -A` never sees it), else next to the
target. Its name carries the restore's journal id, so after a crash `sweep`
removes exactly the files that restore made and never a user's look-alike.
No write follows a symlink: a symlinked directory on the way is replaced by a
real directory (the caller has saved the symlink first), and nothing is ever
written outside the root or into `.git`. A FIFO, socket or device is never opened,
replaced or deleted (it cannot have been saved). A rewritten file keeps the permission
bits the file on disk had, as editors do, and its extended attributes (a POSIX ACL); only
the exec bit follows the snapshot. A new file gets what its folder gives (the umask, a
default ACL, a setgid folder's group: made beside its target there), as git's do.
Given the stamp its caller saw, a write or delete first checks that nothing changed the
path since, so a user typing meanwhile is never overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import uuid
from collections.abc import Callable
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from ..core import faults
from ..core.durability import Touched
from ..core.ownership import give_new
from ..core.treeops import Entry
from ..core.worktree import (
    Stamp,
    UnsafePath,
    check_path,
    same_stamp,
    stamp_of,
    under_real_dirs,
)
from .filemeta import (
    has_default_acl,
    inherit_group,
    keep_attributes,
    keep_owner,
    restored_mode,
    set_bits,
)

#: `expect` default: write without checking what is there.
UNCHECKED: object = object()
#: A ledger entry: the writer was about to change the path (and may have).
ATTEMPTED = "attempted"


class ChangedMeanwhile(OSError):
    """The path changed since the caller looked (or is a special file): left alone."""


class WorkWriter:
    """Applies (path → entry or None) changes and remembers how to roll them back."""

    def __init__(
        self, root: Path, repo: pygit2.Repository, staging: Path, tag: str, exec_bits: bool = True
    ) -> None:
        self.root = root
        self.repo = repo
        #: Whether the disk keeps exec bits: where not, a file matches either mode (ondisk.py).
        self.exec_bits = exec_bits
        self.staging = staging
        self._temp_prefix = f".turnback-{tag}-"
        self._staging_ok: bool | None = None
        self._decides: dict[Path, bool] = {}
        #: Permission bits each path had before this writer first replaced or deleted
        #: it: a rollback puts back exactly those.
        self._original_bits: dict[str, int] = {}
        #: What this writer changed on disk, for `durability.make_durable`.
        self.touched = Touched()
        #: Path → ATTEMPTED, or the stamp it had right after this restore wrote it (None:
        #: deleted); kept in staging too, line by line, for a recovery after a crash. None
        #: when not known (a recovery that found no ledger): judge by content alone.
        self.ledger: dict[str, object] | None = {}
        self.ledger_path = staging / f"ledger-{tag}.jsonl"
        self._ledger_fd: int | None = None

    def start_ledger(self) -> None:
        """Makes the ledger, empty, before the restore's journal exists: a recovery that
        finds it empty knows nothing was written. Where it cannot be made, recovery judges
        every path by its content, as before ledgers."""
        try:
            self._open_ledger()
        except OSError:
            self._set_ledger_aside()
            self.ledger = None

    def _open_ledger(self) -> None:
        if self._ledger_fd is None:
            self.staging.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
            self._ledger_fd = os.open(self.ledger_path, flags, 0o600)

    def _note(self, path: str, state: object) -> None:
        """Records in the ledger what the restore is about to do, or did, at `path`: a
        recovery rolls back only what it finds there, as the restore left it, so a user's
        rewrite after a crash (`git reset --hard` writes the same bytes) stays the user's.
        Each line is written unbuffered, so a kill keeps every line before it."""
        if self.ledger is None:
            return
        self.ledger[path] = state
        try:
            self._open_ledger()
            line = json.dumps([path, state if state is ATTEMPTED else _stamp_json(state)])
            os.write(self._ledger_fd, line.encode() + b"\n")
        except OSError:
            self._set_ledger_aside()
            self.ledger = None

    def _set_ledger_aside(self) -> None:
        """A ledger that misses a line must not be read (a path written after the line it
        misses would look untouched, and stay unrolled): renamed, which needs no room on a
        full disk, recovery then judges every path by its content, as before ledgers."""
        if self._ledger_fd is not None:
            os.close(self._ledger_fd)
            self._ledger_fd = None
        try:
            os.replace(self.ledger_path, self.ledger_path.with_suffix(".incomplete"))
        except FileNotFoundError:
            pass
        except OSError:
            with contextlib.suppress(OSError):
                self.ledger_path.unlink()

    def drop_ledger(self, keep_file: bool = False) -> None:
        """Closes and removes the ledger: the restore ended, or was recovered (kept for a
        recovery that is about to read it)."""
        if self._ledger_fd is not None:
            os.close(self._ledger_fd)
            self._ledger_fd = None
        if not keep_file:
            with contextlib.suppress(OSError):
                self.ledger_path.unlink(missing_ok=True)

    def load_ledger(self) -> None:
        """The ledger a crashed restore of this journal left; None if there is none."""
        try:
            lines = self.ledger_path.read_text(encoding="utf-8").splitlines()
        except (OSError, ValueError):
            self.ledger = None
            return
        ledger: dict[str, object] = {}
        for line in lines:
            try:
                path, state = json.loads(line)
            except ValueError:
                continue  # a line a crash cut short: its path keeps the entry before it
            ledger[path] = ATTEMPTED if state == ATTEMPTED else _stamp_from_json(state)
        self.ledger = ledger

    def _temp_name(self) -> str:
        return f"{self._temp_prefix}{uuid.uuid4().hex[:8]}.tmp"

    def _is_ours(self, name: str) -> bool:
        return name.startswith(self._temp_prefix) and name.endswith(".tmp")

    def _staging_dir(self) -> Path | None:
        """The staging directory when a rename from it into the work tree can work."""
        if self._staging_ok is None:
            try:
                self.staging.mkdir(parents=True, exist_ok=True)
                self._staging_ok = os.stat(self.staging).st_dev == os.stat(self.root).st_dev
            except OSError:
                self._staging_ok = False
        return self.staging if self._staging_ok else None

    def sweep(self, paths: list[str]) -> int:
        """Removes the temporary files this restore's killed writes left, in staging and
        next to `paths`."""
        removed = sweep_staging(self.staging)
        folders: set[Path] = set()
        for path in paths:
            try:
                parts = check_path(path)
            except UnsafePath:
                continue
            if under_real_dirs(self.root, path):
                folders.add(self.root.joinpath(*parts[:-1]))
        for folder in folders:
            removed += _remove_files(folder, self._is_ours)
        return removed

    def _prepare_parents(self, parts: list[str]) -> Path:
        """Real directories down to the file's parent, replacing symlinks and creating gaps."""
        current = self.root
        for part in parts[:-1]:
            current = current / part
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                os.mkdir(current)
                give_new(current, current.parent)  # run as root: the folder's owner's
                self.touched.changed_entries_of(current.parent)
                continue
            if stat.S_ISDIR(st.st_mode):
                continue
            # A symlink or a file where the snapshot has a directory: the caller planned
            # (and saved) its removal; never write through it.
            rel = current.relative_to(self.root).as_posix()
            self._note(rel, ATTEMPTED)
            os.unlink(current)
            if stat.S_ISREG(st.st_mode):
                self._original_bits.setdefault(rel, stat.S_IMODE(st.st_mode) & 0o777)
            os.mkdir(current)
            give_new(current, current.parent)
            self.touched.changed_entries_of(current.parent)
        return current

    def write(self, path: str, entry: Entry, expect: Stamp | None | object = UNCHECKED) -> None:
        """Puts `entry` at `path`; with `expect`, only if the path still has that stamp."""
        parts = check_path(path)
        if expect is not UNCHECKED:
            self._check_unchanged(path, expect)
        parent = self._prepare_parents(parts)
        target = parent / parts[-1]
        existing = _lstat_or_none(target)
        if existing is not None and _is_special(existing):
            raise ChangedMeanwhile(errno.EEXIST, "a special file is there", path)
        original = self._original_bits.get(path)
        replaced = existing if existing is not None and stat.S_ISREG(existing.st_mode) else None
        # A new file takes what its folder gives (the umask, or a default ACL), as git's do.
        fresh = replaced is None and original is None
        bits = None if fresh else restored_mode(existing, original, entry.mode)
        if replaced is not None:
            self._original_bits.setdefault(path, stat.S_IMODE(replaced.st_mode) & 0o777)
        data = _blob_data(self.repo, entry.oid)
        staging = None if self._folder_decides(parent) else self._staging_dir()
        temp = self._make_temp(staging or parent, entry, data, bits)
        try:
            if replaced is not None and entry.mode != FileMode.LINK:
                keep_attributes(temp, target, bits)  # its ACL, and other extended attributes
            if staging is not None:
                inherit_group(temp, parent)
            keep_owner(temp, existing, parent)
            faults.step("file staged")
            if expect is not UNCHECKED:
                self._check_unchanged(path, expect)  # the last moment before the rename
            self._note(path, ATTEMPTED)
            if os.path.isdir(target) and not os.path.islink(target):
                os.rmdir(target)  # only an empty directory; a full one raises and rolls back
            try:
                os.replace(temp, target)
            except OSError as failed:
                if failed.errno != errno.EXDEV:
                    raise
                # A mount point below the root: stage next to the target instead.
                os.unlink(temp)
                temp = self._make_temp(parent, entry, data, bits)
                keep_owner(temp, existing, parent)
                os.replace(temp, target)
            self._note(path, stamp_of(os.lstat(target)))
            self.touched.wrote(target)
            faults.step("file written")
        except BaseException:
            if os.path.lexists(temp):
                os.unlink(temp)
            raise

    def _check_unchanged(self, path: str, expect: object) -> None:
        if not same_stamp(expect, _current_stamp(self.root, path)):
            raise ChangedMeanwhile(errno.EBUSY, "changed since turnback looked", path)

    def _folder_decides(self, folder: Path) -> bool:
        """Whether a file made in `folder` gets what a file made elsewhere would not: a
        setgid folder's group (which only a member of it may give with chown) or a default
        ACL. There the temporary file is made beside its target, where the kernel gives
        both; from staging, the user's team lost access to what an undo wrote."""
        known = self._decides.get(folder)
        if known is None:
            try:
                known = bool(os.stat(folder).st_mode & stat.S_ISGID) or has_default_acl(folder)
            except OSError:
                known = False
            self._decides[folder] = known
        return known

    def _make_temp(self, folder: Path, entry: Entry, data: bytes, bits: int | None) -> Path:
        """The file to rename into place; `bits` None: what the folder gives a new file."""
        temp = folder / self._temp_name()
        try:
            if entry.mode == FileMode.LINK:
                os.symlink(os.fsdecode(data), temp)
            else:
                executable = entry.mode == FileMode.BLOB_EXECUTABLE
                create = (0o777 if executable else 0o666) if bits is None else 0o644
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, create)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                if bits is not None:
                    set_bits(temp, bits)
        except BaseException:
            if os.path.lexists(temp):
                os.unlink(temp)
            raise
        return temp

    def delete(
        self, path: str, keep_dir: Callable[[str], bool], expect: Stamp | None | object = UNCHECKED
    ) -> None:
        """Removes the file at `path`; with `expect`, only if it still has that stamp."""
        parts = check_path(path)
        target = self.root.joinpath(*parts)
        if not under_real_dirs(self.root, path):
            return  # the file is not really at this path: nothing of ours to delete
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            return
        if _is_special(st):
            raise ChangedMeanwhile(errno.EEXIST, "a special file is there", path)
        if expect is not UNCHECKED and not same_stamp(expect, stamp_of(st)):
            raise ChangedMeanwhile(errno.EBUSY, "changed since turnback looked", path)
        self._note(path, ATTEMPTED)
        os.unlink(target)
        self._note(path, None)
        if stat.S_ISREG(st.st_mode):
            self._original_bits.setdefault(path, stat.S_IMODE(st.st_mode) & 0o777)
        self.touched.changed_entries_of(target.parent)
        faults.step("file deleted")
        self._prune_empty_dirs(parts[:-1], keep_dir)

    def _prune_empty_dirs(self, parts: list[str], keep_dir: Callable[[str], bool]) -> None:
        """Removes directories left empty, unless the target state has them."""
        while parts:
            rel = "/".join(parts)
            if keep_dir(rel):
                return
            try:
                os.rmdir(self.root.joinpath(*parts))
            except OSError:
                return
            parts = parts[:-1]
            self.touched.changed_entries_of(self.root.joinpath(*parts))


class ObjectGone(pygit2.GitError):
    """A blob the restore must write is not in the repository: a failure the restore rolls
    back (pygit2's KeyError would pass its rollback by)."""


def _blob_data(repo: pygit2.Repository, oid: str) -> bytes:
    try:
        return repo[pygit2.Oid(hex=oid)].data
    except KeyError:
        raise ObjectGone(f"object {oid} is missing from the repository") from None


def _is_special(st: os.stat_result) -> bool:
    """A FIFO, socket or device: never opened, replaced or deleted."""
    return not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode))


def _lstat_or_none(full: Path) -> os.stat_result | None:
    try:
        return os.lstat(full)
    except FileNotFoundError:
        return None


def _current_stamp(root: Path, path: str) -> Stamp | None:
    """The stamp of what is at `path` now; None when nothing (or a directory) is there."""
    if not under_real_dirs(root, path):
        return None
    st = _lstat_or_none(root.joinpath(*path.split("/")))
    return stamp_of(st) if st is not None and not stat.S_ISDIR(st.st_mode) else None


def sweep_staging(staging: Path, ledgers: bool = False) -> int:
    """Empties turnback's staging directory of temporary files (only turnback writes
    there): the leftovers of a killed restore, or of a rename a power loss undid; with
    `ledgers`, also the ledgers no journal needs any more."""
    kinds = (".turnback-", "ledger-") if ledgers else (".turnback-",)
    return _remove_files(staging, lambda name: name.startswith(kinds))


def _remove_files(folder: Path, ours: Callable[[str], bool]) -> int:
    try:
        names = [name for name in os.listdir(folder) if ours(name)]
    except OSError:
        return 0
    removed = 0
    for name in names:
        try:
            os.unlink(folder / name)
            removed += 1
        except FileNotFoundError:
            pass
    return removed


def _stamp_json(stamp: object) -> list[int] | None:
    return list(stamp) if isinstance(stamp, tuple) else None  # type: ignore[arg-type]


def _stamp_from_json(value: object) -> Stamp | None:
    return tuple(value) if isinstance(value, list) else None  # type: ignore[return-value]
