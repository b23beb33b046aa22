"""One capture across the whole workspace: the root's files and every member repository's.

A workspace is the folder a capture is made in and every repository below it that is
not ignored: nested repositories, initialised submodules, linked worktrees inside it.
Each member keeps its own scanner (its own private stat-cache index, in the member's
git directory, keyed by workspace), so an unchanged file is never rehashed; the
member's tree is then copied into the workspace's object database (only the objects it
lacks: content-addressed, each version written once) and grafted at the member's path
in place of the gitlink or the left-out directory. The result is ONE tree: one
timeline, one journal, and the restore, conflict, diff and recovery code work across
every repository at once, with workspace-relative paths. Nothing inside any `.git` is
ever part of the tree or written.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2

from ..config import Settings
from ..core.gitpaths import is_utf8, path_is_ignored
from ..core.grafting import copy_missing, graft
from ..core.repository import WorkspaceRepo
from ..core.treeops import Entry, tree_with
from ..core.worktree import Stamp, stamp_at
from ..errors import UnsupportedRepository
from .captured import Progress, Snapshot
from .churn import retrying
from .member import Member, open_member
from .scanner import Scanner
from .untracked import NESTED_REPOSITORY, SUBMODULE, Skipped
from .userindex import UserIndex

#: Reasons a scanner gives for a directory that is a repository of its own.
MEMBER_REASONS = (NESTED_REPOSITORY, SUBMODULE)
#: A repository past `repositoryLimit`: reported, its files neither captured nor touched.
REPOSITORY_LIMIT = "repositoryLimit"
#: `nestedRepositories` values.
CAPTURE = "capture"
REPORT = "report"


def _under(path: str, prefix: str) -> bool:
    return path.startswith(prefix + "/")


class WorkspaceScanner:
    """The root's Scanner plus one per member repository; the same interface as Scanner."""

    def __init__(self, ws: WorkspaceRepo) -> None:
        self.ws = ws
        self.root = Scanner(ws)
        self.members: dict[str, Member] = {}
        #: Repositories past the limit, reported as `repositoryLimit`.
        self.limited: list[str] = []
        self._known = ws.state_dir / "members.json"
        #: The stamp of `members.json` when last read or written here.
        self._loaded: Stamp | None = None
        #: The settings of the last capture: a change means finding the members again.
        self._settings: Settings | None = None
        #: The last combined tree, by the root tree and the member trees it was made of.
        self._combined: tuple[object, pygit2.Oid] = (None, pygit2.Oid(raw=b"\0" * 20))

    @property
    def user_index(self) -> UserIndex:
        return self.root.user_index

    # ---- membership ----------------------------------------------------------------------

    def _open(self, path: str) -> Member | None:
        if path in self.members:
            return self.members[path]
        if not is_utf8(path):
            return None  # a tree builder cannot name it: stays a reported nested repository
        member_ws = open_member(self.ws, path)
        if member_ws is None:
            return None
        scanner = Scanner(member_ws)
        scanner.holds_objects = True  # the workspace's copies are the ones flushed first
        return Member(path, member_ws, scanner)

    def load(self) -> bool:
        """The members the last discovery found (any process), those still repositories.

        A member whose `.git` went away (`rm -rf api`) is dropped at once: nothing is ever
        written into where its `.git` was (no lock file, no object, no stat cache). The
        file is read again whenever another process wrote it: a server started before the
        CLI's first capture found the members kept a nested repository's files out of its
        undos. Says whether a member went or came.
        """
        gone = [p for p in self.members if not os.path.lexists(self.ws.root / p / ".git")]
        for path in gone:
            del self.members[path]
        stamp = stamp_at(self._known)
        if stamp is None or stamp == self._loaded:
            return bool(gone)
        self._loaded = stamp
        try:
            paths = json.loads(self._known.read_text())
        except (OSError, ValueError):
            return bool(gone)
        came = False
        for path in paths if isinstance(paths, list) else []:
            if path in self.members or not isinstance(path, str):
                continue
            if os.path.lexists(self.ws.root / path / ".git"):
                member = self._open(path)
                if member is not None:
                    self.members[path] = member
                    came = True
        return bool(gone) or came

    def _save(self) -> None:
        """Writes the members' list when it differs from the file's: a full scan saves it,
        and rewriting the same bytes cost 2 ms of each on linux's tree."""
        text = json.dumps(sorted(self.members))
        try:
            if _read_or_none(self._known) != text:
                self._known.parent.mkdir(parents=True, exist_ok=True)
                self._known.write_text(text)
        except OSError:
            return  # only a hint for the next process's locks and restores
        self._loaded = stamp_at(self._known)

    def member_of(self, path: str) -> Member | None:
        """The deepest member holding `path`, if any."""
        best: Member | None = None
        for prefix, member in self.members.items():
            if _under(path, prefix) and (best is None or len(prefix) > len(best.path)):
                best = member
        return best

    def release_deleted_packs(self) -> None:
        """New object databases for the handles of a repository whose packs git deleted
        (gc, repack), so that none stays open for the server's lifetime (packfolder.py)."""
        for scanner in self.scanners():
            scanner.handles.release_deleted_packs()

    def packs_due(self) -> bool:
        return any(scanner.handles.packs_due() for scanner in self.scanners())

    def unpack_packs(self) -> None:
        """Unpacks the packs each repository's captures listed (ownpacks.py)."""
        for scanner in self.scanners():
            if scanner.handles.packs_due():
                scanner.handles.unpack_packs()

    def scanners(self) -> list[Scanner]:
        """The root's scanner and each member's."""
        return [self.root, *(member.scanner for member in self.members.values())]

    def lock_paths(self) -> list[Path]:
        """The root's repository lock and its members', each once, in one global order (by
        path): any two overlapping workspaces take the locks they share in the same order,
        so they can never deadlock."""
        self.load()
        locks = {m.ws.lock_path for m in self.members.values()} | {self.ws.lock_path}
        return sorted(locks, key=str)

    def states(self) -> list[dict[str, Any]]:
        """Each member's path, HEAD and head ref, for the turn record."""
        return [self.members[p].state() for p in sorted(self.members)]

    # ---- capture ---------------------------------------------------------------------------

    def _route(self, changed: set[str] | None) -> tuple[set[str] | None, dict[str, set[str]]]:
        """Splits watcher paths into the root's and each member's (member-relative)."""
        if changed is None:
            return None, {}
        mine: set[str] = set()
        routed: dict[str, set[str]] = {path: set() for path in self.members}
        for path in changed:
            member = self.member_of(path)
            if member is None:
                if path not in self.members:  # the member's own folder is the member's
                    mine.add(path)
            else:
                routed[member.path].add(path[len(member.path) + 1 :])
        return mine, routed

    def capture(
        self,
        settings: Settings,
        progress: Progress | None = None,
        cancelled: Callable[[], bool] | None = None,
        changed: set[str] | None = None,
    ) -> Snapshot:
        """The root's snapshot with every member's grafted in; members found again on a
        full scan (`changed` None), else the known ones look only at their changed paths."""
        if settings.nested_repositories == REPORT:
            self.members, self.limited, self._settings = {}, [], settings
            return self.root.capture(settings, progress, cancelled, changed)
        if self.load() or settings != self._settings:
            changed = None  # a member's `.git` went away, or the limits moved: find them again
        self._settings = settings
        mine, routed = self._route(changed)
        snap = self.root.capture(settings, progress, cancelled, mine)
        if changed is not None and self._new_repository_in(snap):
            # A repository the turn made where files were (`git init` in a plain folder's
            # subfolder): its files are a member's now, found by a full scan.
            return self.capture(settings, progress, cancelled, None)
        try:
            if changed is None:
                self._discover(settings, snap, cancelled)
            else:
                for path in sorted(self.members):
                    member = self.members[path]
                    try:
                        member.last = self._member_capture(
                            member, settings, cancelled, routed[path]
                        )
                    except UnsupportedRepository:
                        # It became unreadable (a sparse index turned on): find them again.
                        return self.capture(settings, progress, cancelled, None)
            return self._combine(snap)
        finally:
            for member in self.members.values():
                member.scanner.held.write()  # into its own repository, after the answer

    def _new_repository_in(self, snap: Snapshot) -> bool:
        """Whether a capture reported a repository that is not a member yet."""
        return any(
            s.reason in MEMBER_REASONS and s.path not in self.members and s.path not in self.limited
            for s in snap.skipped
        )

    def _member_capture(
        self,
        member: Member,
        settings: Settings,
        cancelled: Callable[[], bool] | None,
        changed: set[str] | None,
    ) -> Snapshot:
        last = member.last
        # Unchanged and copied already: nothing is read from the member, whose held
        # objects may still be being written (a failed write is its next capture's to mend).
        if (
            changed is not None
            and not changed
            and last is not None
            and member.copied == last.tree
            and not member.scanner.user_index.changed_on_disk()
        ):
            return last  # no scan, no anchor write
        return member.scanner.capture(settings, None, cancelled, changed)

    def _discover(
        self, settings: Settings, snap: Snapshot, cancelled: Callable[[], bool] | None
    ) -> None:
        """Finds the members breadth first from each scan's left-out repositories."""
        found: dict[str, Member] = {}
        self.limited = []
        reported = {s.path for s in snap.skipped if s.reason in MEMBER_REASONS}
        pending = sorted(reported | {p for p in self.members if self._still_member(p)})
        pending.sort(key=lambda p: (p.count("/"), p))
        while pending:
            path = pending.pop(0)
            if path in found:
                continue
            if len(found) >= settings.repository_limit:
                self.limited.append(path)
                continue
            member = self._open(path)
            if member is None:
                continue
            try:
                member.last = member.scanner.capture(settings, None, cancelled, None)
            except UnsupportedRepository:
                continue  # libgit2 cannot read its index: reported as a nested repository
            found[path] = member
            pending += [
                f"{path}/{s.path}" for s in member.last.skipped if s.reason in MEMBER_REASONS
            ]
            pending.sort(key=lambda p: (p.count("/"), p))
        for path, member in self.members.items():
            if path not in found:
                _flush(member)
        self.members = found
        self._save()

    def _still_member(self, path: str) -> bool:
        """A known member the scans did not report: one whose files were all deleted (an
        untracked folder with nothing in it is not listed), yet still a repository of the
        workspace while its `.git` is there and the repository holding it does not ignore it.
        """
        if not os.path.lexists(self.ws.root / path / ".git"):
            return False
        parent = next(
            (
                m
                for p, m in sorted(self.members.items(), reverse=True)
                if _under(path, p) and p != path
            ),
            None,
        )
        if parent is None:
            return not path_is_ignored(self.ws.repo, path + "/")
        return not path_is_ignored(parent.ws.repo, path[len(parent.path) + 1 :] + "/")

    def _combine(self, snap: Snapshot) -> Snapshot:
        """The root tree with each member's tree at its path; one skipped list."""
        tree = snap.tree
        members = set(self.members)
        skipped = [
            s
            for s in snap.skipped
            if s.path not in members
            and s.path not in self.limited
            and self.member_of(s.path) is None
        ]
        grafts: dict[str, pygit2.Oid] = {}
        for path in sorted(self.members, key=lambda p: (p.count("/"), p)):
            member = self.members[path]
            assert member.last is not None
            if member.copied != member.last.tree:
                source, read = member.scanner.held.source(member.ws.repo)
                copy_missing(source, self.ws.repo, member.last.tree, read)
                member.copied = member.last.tree
            grafts[path] = member.last.tree
            skipped += [
                Skipped(f"{path}/{s.path}", s.reason, s.identity)
                for s in member.last.skipped
                if f"{path}/{s.path}" not in members and f"{path}/{s.path}" not in self.limited
            ]
        key = (tree, tuple(sorted(grafts.items())))
        if grafts and key != self._combined[0]:
            self._combined = (key, graft(self.ws.repo, tree, grafts))
        if grafts:
            tree = self._combined[1]  # nothing changed: the same tree, nothing written
        skipped += [Skipped(path, REPOSITORY_LIMIT) for path in self.limited]
        return Snapshot(tree=tree, skipped=sorted(set(skipped), key=lambda s: s.path))

    # ---- paths (restores) ----------------------------------------------------------------

    def capture_paths(
        self, settings: Settings, base: pygit2.Tree | None, paths: set[str]
    ) -> Snapshot:
        """`base` with `paths` as they are on disk now, each hashed by the repository
        holding it, under that repository's rules."""
        if settings.nested_repositories == REPORT:
            return self.root.capture_paths(settings, base, paths)
        self.load()
        return retrying(
            lambda: self._capture_paths(settings, base, paths), lambda: None, "nothing changed"
        )

    def _capture_paths(
        self, settings: Settings, base: pygit2.Tree | None, paths: set[str]
    ) -> Snapshot:
        groups: dict[str, set[str]] = {}
        for path in paths:
            member = self.member_of(path)
            groups.setdefault(member.path if member else "", set()).add(path)
        stamps: dict[str, Stamp | None] = {}
        changes, skipped = self.root.path_entries(settings, groups.pop("", set()), stamps, base)
        for prefix, inside in groups.items():
            member = self.members[prefix]
            member.scanner.held.settle()  # a restore never runs beside the member's writes
            cut = len(prefix) + 1
            inner: dict[str, Stamp | None] = {}
            entries, left_out = member.scanner.path_entries(
                settings, {p[cut:] for p in inside}, inner, base, f"{prefix}/"
            )
            for rel, entry in entries.items():
                if entry is not None:
                    copy_missing(member.ws.repo, self.ws.repo, pygit2.Oid(hex=entry.oid))
                changes[f"{prefix}/{rel}"] = entry
            stamps.update((f"{prefix}/{rel}", stamp) for rel, stamp in inner.items())
            skipped += [Skipped(f"{prefix}/{s.path}", s.reason, s.identity) for s in left_out]
        tree = tree_with(self.ws.repo, base, changes)
        return Snapshot(
            tree=tree, skipped=sorted(set(skipped), key=lambda s: s.path), stamps=stamps
        )

    def tracks(self, path: str) -> bool:
        """Whether the repository holding `path` tracks it."""
        member = self.member_of(path)
        if member is None:
            return not self.ws.shadow and self.root.user_index.tracks(path)
        member.scanner.user_index.refresh()
        return member.scanner.user_index.tracks(path[len(member.path) + 1 :])

    def ignored_untracked(self, path: str) -> bool:
        """Ignored by the rules of the repository holding `path`, and not tracked there."""
        return not self.tracks(path) and self.ignored_by_rules(path)

    def ignored_by_rules(self, path: str) -> bool:
        """Ignored by the rules of the repository holding `path`, tracked there or not."""
        member = self.member_of(path)
        if member is None:
            return path_is_ignored(self.ws.repo, path)
        return path_is_ignored(member.ws.repo, path[len(member.path) + 1 :])

    def flush(self) -> None:
        self.root.flush()
        for member in self.members.values():
            _flush(member)


def _flush(member: Member) -> None:
    """Saves a member's stat cache, unless the repository went away meanwhile."""
    with contextlib.suppress(OSError, pygit2.GitError):  # its `.git` was deleted meanwhile
        member.scanner.flush()


__all__ = ["Entry", "Member", "WorkspaceScanner", "REPOSITORY_LIMIT"]


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None
