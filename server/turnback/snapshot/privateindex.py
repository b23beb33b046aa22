"""The scanner's private index: its stat cache as a file, and that file's life.

The file is seeded from the user's index (so a first capture starts warm), loaded on a
pool thread (libgit2 releases the GIL: ~100 ms of C on linux's tree) or preloaded before
the first capture by a watching process, and anchored by a commit under `refs/turnback/`
so that git gc keeps every object it names. A seeded index's entries that may not be the
bytes on disk are checked from the file's bytes while it loads (seedcheck.py).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable
from concurrent.futures import Future, wait
from pathlib import Path

import pygit2

from ..core.gitrefs import set_ref
from ..core.locking import repository_lock
from ..core.objectwrites import write_commit, written
from ..core.pygit2_internals import attach_repository, open_index
from ..core.repository import WorkspaceRepo
from ..errors import TurnbackError
from .cachewrite import CacheWriter, write_index_file
from .seedcheck import SeedCheck, untrusted_entries, untrusted_in_file
from .userindex import Stamp, UserIndex, refuse_sparse_index
from .workdir_scan import executor

_Stamp = tuple[int, int, int, int]


def _file_stamp(path: Path) -> _Stamp | None:
    """Changes whenever the file is written again (git and libgit2 write a new inode)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _read_index(path: Path) -> pygit2.Index | None:
    """An index file on its own (no repository: safe on another thread), None if absent."""
    return open_index(str(path)) if path.exists() else None


log = logging.getLogger(__name__)

#: How the private index keeps its entries; a file seeded under another is started over.
#: 1: every entry names the bytes on disk (raw, unfiltered), its seed entries checked.
CACHE_FORMAT = 1


class PrivateIndex:
    """One repository's private index: loaded, seeded, preloaded and anchored."""

    def __init__(self, ws: WorkspaceRepo, user_index: UserIndex, cache_writer: CacheWriter):
        self.ws = ws
        self.path = ws.state_dir / "index"
        #: Anchors the private index's tree: it names blobs no timeline may reference yet.
        self.anchor_ref = f"{ws.ref_prefix}/index"
        #: The index in memory, once loaded; None to load it from its file again.
        self.index: pygit2.Index | None = None
        #: The tree of the index as last written, for path-wise updates.
        self.tree: pygit2.Oid | None = None
        #: The index is a fresh copy of the user's (or empty): nothing in it is untracked,
        #: so there is nothing for new ignore rules to drop.
        self.seeded = False
        #: Whether the in-memory index relies on the anchor ref (set or found by this
        #: process) to keep what it names from git's gc.
        self._anchored = False
        #: The seed's untrusted entries, read from its bytes while it loads.
        self.seed_check: SeedCheck | None = None
        #: Present from seeding until a full capture has hashed the untrusted seeded
        #: entries again (seedcheck.py), so a capture that fails first still does it.
        self.unverified = ws.state_dir / "index.unverified"
        #: Which CACHE_FORMAT seeded the file (none: a turnback from before it was noted).
        self.format_path = ws.state_dir / "index.format"
        #: The file as `preload` found it, and its load.
        self._preloaded: tuple[_Stamp | None, Future[pygit2.Index | None]] | None = None
        self._user_index = user_index
        self._cache_writer = cache_writer
        #: The user's index file version the seed was copied from, and the seed file's
        #: own stamp: while both still hold, the seed's entries are the user's.
        self._seed_of: Stamp | None = None
        self._seed_file: _Stamp | None = None

    def load(
        self, user_index_too: bool = False, meanwhile: Callable[[], None] | None = None
    ) -> pygit2.Index:
        """The index, loaded from its file if need be; with `user_index_too`, the user's
        is refreshed meanwhile (each load is ~40 ms of C at 100k entries), or lent this
        one when it is a fresh seed of it (the caller gives it back before changing it),
        and so is `meanwhile` called."""
        if self.index is not None:
            if user_index_too:
                self._user_index.refresh()
            if meanwhile is not None:
                meanwhile()
            return self.index
        self._prepare_file()
        loading = self.take_preloaded() or executor().submit(_read_index, self.path)
        planned = user_index_too and self.lends_user_index()
        try:
            if user_index_too and not planned:
                self._user_index.refresh()
            if meanwhile is not None:
                meanwhile()
        except BaseException:
            wait([loading])  # the load must not outlive this capture's error
            raise
        try:
            index = loading.result()
        except pygit2.GitError:
            # Only turnback writes this file, whole, by rename: one that does not read is
            # damaged (a crash on a real disk, a full disk), and only a cache: start over.
            index = None
            self.path.unlink(missing_ok=True)
        lent = planned and index is not None and self._is_the_seed(index)
        if index is not None:
            index = self._adopt(index)
            if not self.seeded:
                self.tree = self._anchored_tree(index)
                if self.tree is None:
                    index = None  # it may name objects that git gc has since deleted
        if index is None:
            self.reseed()
            index = self._adopt(open_index(str(self.path)))
        self.index = index
        if lent and self._seed_of is not None:
            self._user_index.borrow(index, self._seed_of)  # given back before it changes
        elif planned:
            self._user_index.refresh()
        return index

    def lends_user_index(self) -> bool:
        """Whether the next load may stand for the user's index too (userindex.py): the
        file is, or will be, a fresh seed copied from the user's index as it still is."""
        if self.ws.shadow or self.index is not None:
            return False
        seed_of = self._seed_of if self.seeded else None
        if seed_of is None and not self.path.exists():
            seed_of = self._user_index.stamp_now()  # the load seeds it from this very file
        return (
            seed_of is not None
            and seed_of == self._user_index.stamp_now()
            and not self._user_index.holds(seed_of)
        )

    def _is_the_seed(self, index: pygit2.Index) -> bool:
        """Whether `index` was read from the seed this object copied, whose source the
        user's index file still is, and holds no conflicts (which `_adopt` drops)."""
        return (
            self.seeded
            and self._seed_of is not None
            and _file_stamp(self.path) == self._seed_file
            and self._user_index.stamp_now() == self._seed_of
            and index.conflicts is None
        )

    def _prepare_file(self) -> None:
        self.ws.state_dir.mkdir(parents=True, exist_ok=True)
        if not self.ws.shadow:
            refuse_sparse_index(self.ws.repo)  # before a seed copies it
        if not self.path.exists() or not self._written_by_this_format():
            self.reseed()

    def _written_by_this_format(self) -> bool:
        """Whether the file was seeded by a turnback that keeps this cache as this one does:
        one from before snapshots held the bytes on disk named git's cleaned blobs (LF for a
        CRLF file), which this one trusted, and an undo wrote LF over the user's CRLF."""
        try:
            return self.format_path.read_text().strip() == str(CACHE_FORMAT)
        except (OSError, UnicodeError):
            return False

    def preload(self) -> None:
        """Starts loading the index, seeding it first if need be, for the next capture:
        a server calls it as it sets its watch up, so that its first capture finds the
        index loaded and the seed checked. Skipped while the repository's lock is held
        (never waited for: a capture holds it before the engine's lock, which the caller
        holds)."""
        if self.index is not None or self._preloaded is not None:
            return
        try:
            with repository_lock(self.ws.lock_path, timeout=0):
                self._prepare_file()
                stamp = _file_stamp(self.path)
                loading = executor().submit(_read_index, self.path)
                self._preloaded = (stamp, loading)
                if self.seeded:  # while it loads, from the same bytes
                    self.seed_check = self.untrusted_in_file()
        except (TurnbackError, OSError):
            return  # the capture prepares the file itself, and says what failed

    def will_load(self) -> bool:
        """Whether `load` will read the file: not loaded, and no preload or a stale one."""
        if self.index is not None:
            return False
        return self._preloaded is None or _file_stamp(self.path) != self._preloaded[0]

    def take_preloaded(self) -> Future[pygit2.Index | None] | None:
        """The preloaded index's load, if the file is still the one it read."""
        preloaded, self._preloaded = self._preloaded, None
        if preloaded is None:
            return None
        stamp, loading = preloaded
        if stamp is not None and _file_stamp(self.path) == stamp:
            return loading
        # Another process wrote the file since: it is neither what was read nor a seed.
        self.seeded, self.seed_check = False, None
        return None

    def _adopt(self, index: pygit2.Index) -> pygit2.Index:
        """Attaches a loaded index to the repository and drops any conflicts."""
        attach_repository(index, self.ws.repo)
        if index.conflicts is not None:
            for path in [c[1].path if c[1] else (c[0] or c[2]).path for c in index.conflicts]:
                del index.conflicts[path]
        return index

    def drop(self) -> None:
        """Forgets the index and its file (a cache): the next capture seeds it again. For a
        seed copied from a user's index libgit2 cannot read (a split index)."""
        self._cache_writer.settle()
        self.index, self.tree = None, None
        self.path.unlink(missing_ok=True)

    def reseed(self) -> None:
        """Starts the index again from the user's (its stat cache), or empty."""
        self.drop()
        self.seeded, self._anchored = True, False
        self.seed_check, self._preloaded = None, None
        self.unverified.touch()
        user = self.ws.user_index_path
        self._seed_of = None
        if user is not None and user.exists():
            before = self._user_index.stamp_now()
            shutil.copyfile(user, self.path)
            # With the user's index's mtime, which tells libgit2 (as git) which entries are
            # racily clean: those are hashed again, where a fresh mtime made them trusted.
            with contextlib.suppress(OSError):
                shutil.copystat(user, self.path)
            if self._user_index.stamp_now() == before:
                self._seed_of = before  # a byte copy of that version of the user's index
        else:
            pygit2.Index(str(self.path)).write()
        self._seed_file = _file_stamp(self.path)
        self.format_path.write_text(f"{CACHE_FORMAT}\n")

    def _anchored_tree(self, index: pygit2.Index) -> pygit2.Oid | None:
        """This index's tree when the anchor ref holds it, so gc kept all it names."""
        try:
            ref = self.ws.repo.references.get(self.anchor_ref)
            if ref is None:
                return None
            anchored = self.ws.repo[ref.target].tree_id
        except (pygit2.GitError, KeyError, ValueError):
            return None  # gone, or damaged (an empty ref file): the cache starts over
        tree = self.written_tree(index)
        self._anchored = tree == anchored
        return tree if self._anchored else None

    def anchor_gone(self) -> bool:
        """Whether the anchor ref the in-memory index relies on is gone: turnback's refs
        deleted by hand, after which a gc may have deleted objects the index names (a
        snapshot built from it would name them too). Nothing else ever deletes it."""
        return self._anchored and self.ws.repo.references.get(self.anchor_ref) is None

    def anchor_commit(self, repo: pygit2.Repository, tree: pygit2.Oid) -> pygit2.Oid:
        """The commit that anchors `tree`, written through `repo`: a capture's batch, which
        writes it to disk in one pack with the tree's new objects."""
        sig = pygit2.Signature("turnback", "turnback@localhost", 0, 0)
        return write_commit(repo, sig, sig, "turnback: scan cache\n", tree, [])

    def anchor(self, commit: pygit2.Oid, repo: pygit2.Repository | None = None) -> None:
        """Keeps everything the index names reachable, before the index is saved; the ref
        is not written again when it already names `commit` (a capture with no change).
        Through `repo` when another thread writes it (heldobjects.py)."""
        repo = repo or self.ws.repo
        try:
            ref = repo.references.get(self.anchor_ref)
        except pygit2.GitError:
            ref = None  # damaged (an empty ref file after a crash): written anew
        if ref is None or ref.target != commit:
            set_ref(repo, self.anchor_ref, commit, "scan cache anchor")
        self._anchored = True

    def written_tree(self, index: pygit2.Index) -> pygit2.Oid | None:
        """The index's tree as it stands (libgit2 writes it whole), None if it cannot."""
        try:
            return written(lambda: index.write_tree(self.ws.repo))
        except pygit2.GitError:
            return None

    def seed_tree(self, index: pygit2.Index) -> pygit2.Oid | None:
        """A fresh seed's tree, when the user's cache-tree named it (seedcheck.py): libgit2
        then returns it without writing a tree, and the first capture writes only the
        trees on the paths it changes (indextree.py) rather than every tree (~35 ms on
        linux's tree); None otherwise. Call it before anything changes `index`."""
        check = self.seed_check
        if check is None or not check.tree_cached or check.count != len(index):
            return None
        tree = self.written_tree(index)
        return tree if tree is not None and tree in self.ws.repo else None

    def untrusted(self, index: pygit2.Index, from_file: SeedCheck | None) -> list[str]:
        """Seeded entries to hash again, raw (see seedcheck.py)."""
        return untrusted_entries(
            self.ws.repo, index, self.path, self.ws.root, self._common(), from_file
        )

    def untrusted_in_file(self) -> SeedCheck:
        return untrusted_in_file(self.ws.repo, self.path, self.ws.root, self._common())

    def _common(self) -> Path | None:
        return None if self.ws.shadow else self.ws.lock_path.parent.parent

    def save(self) -> None:
        """Writes the in-memory index to its file, so the next process starts warm; not
        when turnback's state directory is gone (deleted while this process ran): it is
        only a cache, and nothing is ever written where the user removed it."""
        self._cache_writer.settle()
        if self.index is not None and self.path.parent.is_dir():
            try:
                write_index_file(self.index, self.path)
            except (OSError, pygit2.GitError) as error:
                # Another process writing it ("the index is locked"), a full disk: the
                # file stays as that process or the last save left it, and still reads.
                log.warning("turnback could not save its scan cache (%s)", error)
