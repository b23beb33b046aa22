"""Finds FIFOs, sockets and devices in the work tree, which libgit2's scan never lists.

libgit2 silently skips anything that is not a file, symlink or directory, so a
FIFO a turn made would appear in no capture. A full scan therefore also walks
the work tree with `os.scandir` (the entry type comes from the directory
listing: nothing is stat-ed or opened), queued on the scan's own threads behind
libgit2's work (a third thread beside them made three busy threads share two cores).
The walk skips `.git`, nested repositories and excluded directory names; the few
names it returns are checked against the ignore rules afterwards, by the
caller's thread (a libgit2 repository must not be used by two threads at once).

Walking 100k entries in Python costs ~60 ms of a core that libgit2's parallel scan
now wants, so `SpecialFiles` keeps each directory's listing and lists a directory
again only when its mtime, ctime (or inode) changed: adding, removing or renaming an
entry changes the mtime, and a `chmod` the ctime alone (a folder made unreadable was
taken for a readable one, and its files for deleted ones). One `lstat` per directory
remains, git's untracked-cache idea. A directory changed within `RACY_NS` of being
listed is listed again next time, as its times may not show a change made in the same
clock tick.

A walk whose directories are all unchanged needs no walk at all: the last walk's
directories are checked in one plain loop, and only a directory that gained or lost a
subdirectory sends it down the walk again (a warm full scan of linux's tree, 14
alternated samples: 186 -> 172 ms median). That loop is the walk's whole cost then, at
the end of the scan where nothing else runs: it does one `lstat` per directory relative
to the tree's folder and compares the stamp field by field, nothing more. Through a call,
a tuple and a full path per directory, linux's 5,093 took ~14 ms alone; this way 10.4 ms,
nearly all of it the system calls (the capture, six alternated runs of 10: 6 ms less).

The same walk notes each directory it may not list (`PermissionError`), or may list but
not search (`chmod 644`): libgit2 skips such a directory's files without a word, so a
capture would otherwise claim its files gone, and a restore would delete them once they
could be read again.

A watching process lists every directory as it sets its watches up; it reads them
through `list_directory`, so its first full scan lists none of them a second time
beside libgit2's scan threads (a cold capture of linux's tree: 834 -> 645 ms median).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from dataclasses import dataclass, field

#: How close to its listing a directory's mtime makes the listing untrustworthy.
RACY_NS = 2_000_000_000


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What moves when a directory's entries, or who may list them, change: its mtime
    (an entry made, removed or renamed), its ctime (a `chmod 000` moves only that), and
    which directory it is."""
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


@dataclass(frozen=True)
class WalkOutcome:
    """What a walk found, each list sorted: special files, directories it may not list,
    and directories holding a `.git` (which it did not enter)."""

    found: list[str]
    unreadable: list[str]
    nested: list[str]


@dataclass
class _Listing:
    stamp: tuple[int, int, int, int]  # `_stamp` of the directory when listed
    trusted: bool
    has_git: bool = False
    unreadable: bool = False  # listing it was refused
    subdirs: list[str] = field(default_factory=list)
    specials: list[str] = field(default_factory=list)


class SpecialFiles:
    """One work tree's special files, with the listings that make the next walk cheap."""

    def __init__(self, root: str) -> None:
        self._root = root
        self._listings: dict[str, _Listing] = {}
        self._last: SpecialFileWalk | None = None
        #: Directories the last walk listed anew: their entries may have changed.
        self.relisted = 0
        #: The last walk: each directory it reached (relative, full path, listing), the
        #: names it left out, and what it found.
        self._walked: list[tuple[str, str, _Listing]] = []
        #: The same directories as `_walked`, as the quick check reads them: the path
        #: relative to the tree, then the stamp a trusted listing had (`_NEVER` if not).
        self._quick: list[tuple[str, int, int, int, int]] = []
        self._walked_with: frozenset[str] | None = None
        self._found: list[str] = []
        self._unreadable: list[str] = []
        #: The nested repositories it reached, with their listings: the quick check
        #: asks them too, or a `.git` removed would stay reported.
        self._nested: list[tuple[str, str, _Listing]] = []

    def start(self, excluded_names: Iterable[str], pool: Executor | None = None) -> SpecialFileWalk:
        """A walk on a thread of its own, or queued on `pool` (the scan's: scanner.py)."""
        self._settle()
        self._last = SpecialFileWalk(self, _excluded(excluded_names), pool)
        return self._last

    def last_outcome(self) -> WalkOutcome:
        """What the last walk found."""
        nested = sorted(rel_dir for rel_dir, _full, _listing in self._nested)
        return WalkOutcome(sorted(self._found), sorted(self._unreadable), nested)

    def _settle(self) -> None:
        """Waits for the last walk: a capture that failed may have left one running, and
        no two threads ever change the listings at once. Free once it is waited for."""
        if self._last is not None:
            self._last.wait()
            self._last = None

    def list_directory(self, rel_dir: str) -> list[os.DirEntry[str]]:
        """Lists `rel_dir` for another walk (the watcher's, as it sets up) and keeps the
        listing: the next special-file walk then only checks the directory's stamp."""
        self._settle()
        full = os.path.join(self._root, rel_dir) if rel_dir else self._root
        try:
            st = os.lstat(full)
        except OSError:
            return []
        listing, entries = self._read(full, st)
        self._listings[rel_dir] = listing
        return entries

    def _listing(self, rel_dir: str) -> _Listing | None:
        full = os.path.join(self._root, rel_dir) if rel_dir else self._root
        try:
            st = os.lstat(full)
        except OSError:
            self._listings.pop(rel_dir, None)
            return None
        if not stat.S_ISDIR(st.st_mode):
            return None
        known = self._listings.get(rel_dir)
        if known is not None and known.trusted and known.stamp == _stamp(st):
            return known
        self.relisted += 1
        listing, _entries = self._read(full, st)
        self._listings[rel_dir] = listing
        return listing

    def _read(self, full: str, st: os.stat_result) -> tuple[_Listing, list[os.DirEntry[str]]]:
        """The directory's listing, `st` being its stat taken just before."""
        listed_at = time.time_ns()
        changed_at = max(st.st_mtime_ns, st.st_ctime_ns)
        listing = _Listing(_stamp(st), trusted=listed_at - changed_at > RACY_NS)
        try:
            with os.scandir(full) as entries:
                listed = list(entries)
            if listed and st.st_mode & 0o111 != 0o111 and not _searchable(listed[0]):
                raise PermissionError(f"{full}: listed, but not searchable")
        except OSError as error:
            listing.trusted = False
            listing.unreadable = isinstance(error, PermissionError)
            listed = []
        try:
            # Files are nearly every entry: one C call each sets them aside, and only
            # the others are sorted one by one (a cold walk of linux's tree: 293 -> 274 ms).
            others = [e for e in listed if not e.is_file(follow_symlinks=False) or e.name == ".git"]
        except OSError:
            others = listed  # `_sort` notes which entry could not be read
        for entry in others:
            self._sort(entry, listing)
        return listing, listed

    @staticmethod
    def _sort(entry: os.DirEntry[str], listing: _Listing) -> None:
        try:
            if entry.name == ".git":
                listing.has_git = True
            elif entry.is_dir(follow_symlinks=False):
                listing.subdirs.append(entry.name)
            elif not entry.is_file(follow_symlinks=False) and not entry.is_symlink():
                listing.specials.append(entry.name)
        except OSError:
            listing.trusted = False

    def walk(self, excluded: frozenset[str]) -> None:
        self.relisted = 0
        if excluded == self._walked_with and self._same_directories():
            return
        found: list[str] = []
        nested: list[tuple[str, str, _Listing]] = []
        walked: list[tuple[str, str, _Listing]] = []
        stack = [""]
        while stack:  # `relisted` keeps what the check above listed again
            rel_dir = stack.pop()
            listing = self._listing(rel_dir)
            if listing is None:
                continue  # gone
            full = os.path.join(self._root, rel_dir)
            if rel_dir and listing.has_git:
                nested.append((rel_dir, full, listing))  # a nested repository: its owner's
                continue
            walked.append((rel_dir, full, listing))
            prefix = f"{rel_dir}/" if rel_dir else ""
            found.extend(prefix + name for name in listing.specials)
            stack.extend(prefix + name for name in listing.subdirs if name not in excluded)
        seen = {rel_dir for rel_dir, _full, _listing in walked + nested}
        for gone in self._listings.keys() - seen:
            del self._listings[gone]  # no longer reached: forget it, keep memory bounded
        self._walked, self._walked_with, self._found = walked, excluded, found
        self._quick = [_quick_entry(rel_dir, listing) for rel_dir, _full, listing in walked]
        self._unreadable = [rel_dir for rel_dir, _full, listing in walked if listing.unreadable]
        self._nested = nested

    def _same_directories(self) -> bool:
        """Whether the last walk's directories are still every directory it would reach,
        listing again only those whose stamp moved (a plain loop over the last walk's
        directories: half the cost of walking them). False as soon as one is gone, or
        gained or lost a subdirectory or a `.git`, or a nested repository's folder lost
        its `.git`."""
        for position, (rel_dir, full, listing) in enumerate(self._nested):
            fresh = self._current(full, listing)
            if fresh is None or not fresh.has_git:
                return False  # gone, or a folder of this tree again: walked
            self._listings[rel_dir] = fresh
            self._nested[position] = (rel_dir, full, fresh)
        with _top_folder(self._root) as top:
            moved = self._moved(top)
        changed = False
        for position in moved:
            rel_dir, full, listing = self._walked[position]
            fresh = self._current(full, listing)
            if fresh is listing:
                continue
            if fresh is None:
                return False
            self.relisted += 1
            self._listings[rel_dir] = fresh
            self._walked[position] = (rel_dir, full, fresh)
            self._quick[position] = _quick_entry(rel_dir, fresh)
            if fresh.has_git != listing.has_git or set(fresh.subdirs) != set(listing.subdirs):
                return False
            changed = changed or fresh.specials != listing.specials
            changed = changed or fresh.unreadable != listing.unreadable
        if changed:
            self._found = [
                f"{rel_dir}/{name}" if rel_dir else name
                for rel_dir, _full, listing in self._walked
                for name in listing.specials
            ]
            self._unreadable = [r for r, _full, listing in self._walked if listing.unreadable]
        return True

    def _moved(self, top: int | None) -> list[int]:
        """The positions in `_walked` whose directory's stamp moved, or that are gone or
        untrusted: the check's one loop over every directory (5,093 on linux's tree),
        without a call or a tuple per directory (the module's docstring says why)."""
        if top is None:
            return list(range(len(self._walked)))  # each asked through `_current`
        lstat, moved = os.lstat, []
        for position, (path, mtime, ctime, ino, dev) in enumerate(self._quick):
            try:
                st = lstat(path, dir_fd=top)
            except OSError:
                moved.append(position)
                continue
            if (
                st.st_ctime_ns != ctime
                or st.st_mtime_ns != mtime
                or st.st_ino != ino
                or st.st_dev != dev
            ):
                moved.append(position)
        return moved

    def _current(self, full: str, listing: _Listing) -> _Listing | None:
        """The folder's listing now: `listing` itself while its stamp stands, read again
        once it moved; None when the folder is gone or is no folder now."""
        try:
            st = os.lstat(full)
        except OSError:
            return None
        if listing.trusted and listing.stamp == _stamp(st):
            return listing
        if not stat.S_ISDIR(st.st_mode):
            return None
        fresh, _entries = self._read(full, st)
        return fresh


def _searchable(entry: os.DirEntry[str]) -> bool:
    """Whether what a folder holds can be looked at, not only listed: a folder with the read
    bit and not the search bit (`chmod 644`) lists its names, but no file in it can be read,
    and libgit2 then called them deleted (an undo deleted the user's files). Asked only
    where some search bit is missing, of one entry."""
    try:
        entry.stat(follow_symlinks=False)
    except PermissionError:
        return False
    except OSError:
        pass  # gone since the listing: the folder could be searched for it
    return True


#: A stamp no directory has: an untrusted listing's directory is always looked at again.
_NEVER = (-1, -1, -1, -1)


def _quick_entry(rel_dir: str, listing: _Listing) -> tuple[str, int, int, int, int]:
    return (rel_dir or ".", *(listing.stamp if listing.trusted else _NEVER))


@contextmanager
def _top_folder(root: str) -> Iterator[int | None]:
    """A descriptor of the work tree's folder, for `lstat`s relative to it (a path looked
    up from there skips the folders above the tree); None where `lstat` takes no
    `dir_fd` (Windows) or the folder cannot be opened."""
    if os.stat not in os.supports_dir_fd:  # (`lstat` takes it where `stat` does)
        yield None
        return
    try:
        top = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        yield None
        return
    try:
        yield top
    finally:
        os.close(top)


def _excluded(names: Iterable[str]) -> frozenset[str]:
    return frozenset(names) | {".git"}


class SpecialFileWalk:
    """One background walk; `outcome()` waits for it and returns what it found."""

    def __init__(self, files: SpecialFiles, excluded: frozenset[str], pool: Executor | None):
        self._files = files
        self._excluded = excluded
        self._done = threading.Event()
        self._failed: BaseException | None = None
        if pool is not None:
            pool.submit(self._run)
        else:
            threading.Thread(target=self._run, name="turnback-special", daemon=True).start()

    def _run(self) -> None:
        try:
            self._files.walk(self._excluded)
        except BaseException as error:  # raised to the capture, never lost with the thread
            self._failed = error
        finally:
            self._done.set()

    def wait(self) -> None:
        self._done.wait()

    def outcome(self) -> WalkOutcome:
        """What this walk found, once it is done."""
        self.wait()
        if self._failed is not None:
            raise self._failed
        return self._files.last_outcome()
