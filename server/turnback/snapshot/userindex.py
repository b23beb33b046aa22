"""What the user's own index tracks, read without ever writing it.

Captures ask two things of it: is this file tracked, and is this directory
tracked (does any tracked file live under it). Both are binary searches over
the index's sorted entries, so a capture never builds the index's whole tree
(about 0.3 s at 100k files when git left no cache-tree extension). The tree
is built only when a capture must compare untracked entries against it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import pygit2

from ..core.indexfile import GITLINK
from ..core.objectwrites import written
from ..core.pygit2_internals import open_index
from ..core.repository import WorkspaceRepo
from ..core.sorted_index import has_entry_under
from ..core.treeops import changed_paths, entry_at
from ..core.worktree import holds_repository
from ..errors import TurnbackError, UnsupportedRepository
from .workdir_scan import executor

#: What identifies one version of the index file: its mtime, size and inode.
Stamp = tuple[int, int, int]


class UserIndex:
    """The user's index, reloaded only when its file changes.

    A first capture may answer from the private index instead (`borrow`): seeded as a
    byte copy of this file, it holds the same entries until the capture changes it, and
    libgit2 then parses ~8 MiB (linux's tree) once rather than twice. `give_back`, before
    the first change, loads the file on a pool thread for whoever asks next.
    """

    def __init__(self, ws: WorkspaceRepo) -> None:
        self.ws = ws
        self._stamp: Stamp | None = None
        self._index: pygit2.Index | None = None
        #: The load `give_back` started: kept only if the file is still the one `_stamp` names.
        self._loading: Future[pygit2.Index | None] | None = None
        self.borrowed = False
        self._tree: pygit2.Tree | None = None
        self._tree_is_index = False
        self._submodules: list[str] | None = None
        #: tracks_dir's answers for this version of the file (a bisection each, in Python).
        self._tracked_dirs: dict[str, bool] = {}

    @property
    def index(self) -> pygit2.Index | None:
        """The loaded index (once `give_back`'s load is done), None if there is none."""
        if self._loading is not None:
            loading, self._loading = self._loading, None
            try:
                self._index = loading.result()
            except TurnbackError:
                self._index = None  # the next refresh loads it again, and says why
            if self._index is None or self.stamp_now() != self._stamp:
                self._index, self._stamp = None, None  # changed meanwhile: load it again
        return self._index

    def stamp_now(self) -> Stamp | None:
        return self._disk_stamp()[0]

    def holds(self, stamp: Stamp | None) -> bool:
        """Whether the file as `stamp` says is loaded (or lent) already."""
        return stamp is not None and self._stamp == stamp and self.index is not None

    def borrow(self, index: pygit2.Index, stamp: Stamp) -> None:
        """Answers from `index`, a byte copy of this file as `stamp` says, until
        `give_back`: nothing may change `index` meanwhile."""
        self._loading = None
        self._index, self._stamp, self.borrowed = index, stamp, True
        self._tree, self._submodules, self._tracked_dirs = None, None, {}

    def give_back(self) -> None:
        """Stops answering from the borrowed index, before its owner changes it; the
        file loads on a pool thread meanwhile (what was answered from it holds)."""
        if not self.borrowed:
            return
        self.borrowed, self._index = False, None
        path = self.ws.user_index_path
        if path is not None:
            self._loading = executor().submit(_open, str(path))
        else:
            self._stamp = None

    def _disk_stamp(self) -> tuple[Stamp | None, os.stat_result | None]:
        path = self.ws.user_index_path
        try:
            st = os.stat(path) if path else None
        except OSError:
            st = None
        return ((st.st_mtime_ns, st.st_size, st.st_ino) if st else None), st

    @property
    def version(self) -> tuple[int, int, int] | None:
        """The stamp of the file as last loaded: a new one means another index."""
        return self._stamp

    def changed_on_disk(self) -> bool:
        """Whether the index file changed since the last refresh (without reloading it)."""
        stamp, _st = self._disk_stamp()
        return stamp != self._stamp or (self.index is None and stamp is not None)

    def refresh(self) -> bool:
        """Reloads the user's index if its file changed; says whether it did."""
        return self.start_refresh(background=False)()

    def start_refresh(self, background: bool = True) -> Callable[[], bool]:
        """`refresh` in two halves: the file loads on a pool thread (libgit2 reads it with
        the GIL released, ~100 ms at 78k entries) until the call returned waits for it.
        Nothing may use this object in between."""
        path = self.ws.user_index_path
        stamp, st = self._disk_stamp()
        if stamp == self._stamp and (self.index is not None or stamp is None):
            return lambda: False
        index_file = str(path) if st is not None and path is not None else None
        if index_file is not None:
            refuse_sparse_index(self.ws.repo)  # the repository stays on this thread
        loading = executor().submit(_open, index_file) if background and index_file else None

        def finish() -> bool:
            if loading is not None:
                index = loading.result()
            else:
                index = _open(index_file) if index_file is not None else None
            self._stamp, self._loading, self.borrowed = stamp, None, False
            self._index, self._tree, self._submodules = index, None, None
            self._tracked_dirs = {}
            return True

        return finish

    @property
    def tree(self) -> pygit2.Tree | None:
        """The index as a tree (HEAD's during a merge, when the index holds conflicts)."""
        if self._tree is None and self.index is not None:
            try:
                tree = written(lambda: self.index.write_tree(self.ws.repo))  # type: ignore[union-attr]
                self._tree = self.ws.repo[tree]  # type: ignore[assignment]
                self._tree_is_index = True
            except pygit2.GitError:
                head = self.ws.head_commit()
                self._tree = self.ws.repo[head].tree if head else None  # type: ignore[union-attr]
                self._tree_is_index = False
        return self._tree

    def tracked_tree(self) -> pygit2.Tree | None:
        """The index's own tree: None when there is no index or it holds conflicts."""
        tree = self.tree
        return tree if tree is not None and self._tree_is_index else None

    def tree_before_reload(self) -> pygit2.Tree | None:
        """The index as a tree, when its file changed on disk and is about to be reloaded."""
        if self.index is None or not self.changed_on_disk():
            return None
        return self.tracked_tree()

    def tracks_the_same_files(self, before: pygit2.Tree | None) -> bool:
        """Whether the reloaded index tracks the very files it tracked `before`.

        `git status` rewrites the index to refresh stat data, `git add` of a tracked file
        and `git commit` change only staged content: every untracked verdict still holds,
        so the watcher's paths are all a capture must look at, and no full scan is due.
        """
        after = self.tracked_tree()
        if before is None or after is None:
            return False
        return all(
            entry_at(before, path) is not None and entry_at(after, path) is not None
            for path in changed_paths(self.ws.repo, before, after)
        )

    def tracks(self, path: str) -> bool:
        index = self.index  # a property: read once, as captures ask this per path
        return index is not None and path in index

    def is_submodule(self, path: str) -> bool:
        """Whether the user's index records `path` as a submodule (a gitlink)."""
        if self.index is None:
            return False
        try:
            return self.index[path].mode == GITLINK
        except (KeyError, ValueError):
            return False

    def submodules(self) -> list[str]:
        """Submodules named in the root `.gitmodules` that the index records and that are
        checked out, or whose folder holds files but no repository (its `.git` removed, or
        files copied into a submodule never initialized): their files are never snapshotted
        (git lists nothing below a gitlink), so every capture reports them."""
        return [p for p in self._declared_submodules() if _populated(self.ws.root / p)]

    def _declared_submodules(self) -> list[str]:
        if self._submodules is None:
            self._submodules = []
            gitmodules = self.ws.root / ".gitmodules"
            if self.index is not None and gitmodules.is_file():
                try:
                    config = pygit2.Config(str(gitmodules))
                    paths = {e.value for e in config if e.name.endswith(".path") and e.value}
                except (pygit2.GitError, ValueError):
                    paths = set()
                self._submodules = sorted(p for p in paths if self.is_submodule(p))
        return self._submodules

    def tracks_dir(self, rel_dir: str) -> bool:
        known = self._tracked_dirs.get(rel_dir)
        if known is None:
            known = self.index is not None and has_entry_under(
                self.index, os.fsencode(rel_dir) + b"/"
            )
            self._tracked_dirs[rel_dir] = known
        return known


def _populated(folder: Path) -> bool:
    """A repository, or a folder with something in it (an empty one holds nothing to lose)."""
    if holds_repository(folder):
        return True
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


#: What a sparse index is refused with: the config says so, or its `sdir` extension does.
SPARSE_INDEX = (
    "This repository uses a sparse index (index.sparse=true), which turnback cannot read. "
    "Turn it off with `git sparse-checkout init --no-sparse-index` (the sparse checkout "
    "itself stays). Nothing was recorded or changed."
)


def refuse_sparse_index(repo: pygit2.Repository) -> None:
    """A clear error for a sparse index, which libgit2 cannot read (nor a copy of it)."""
    try:
        sparse = repo.config.get_bool("index.sparse")
    except (KeyError, pygit2.GitError, ValueError):
        sparse = False
    if sparse:
        raise UnsupportedRepository(SPARSE_INDEX)


def _open(path: str) -> pygit2.Index:
    """The user's index, or a clear error for one libgit2 cannot read."""
    try:
        return open_index(path)
    except pygit2.GitError as error:
        raise unreadable_index(error) from None


def unreadable_index(error: Exception) -> UnsupportedRepository:
    """The error for an index libgit2 refuses (or a copy of it), naming the fix when known:
    a split index is every capture's and undo's refusal until it is turned off."""
    if "'sdir'" in str(error):  # a long-lived process whose config read predates it
        return UnsupportedRepository(SPARSE_INDEX)
    if "'link'" in str(error):
        return UnsupportedRepository(
            "This repository uses a split index (core.splitIndex, or `git update-index "
            "--split-index`), which turnback cannot read. Turn it off with `git config "
            "core.splitIndex false && git update-index --no-split-index`. Nothing was "
            "recorded or changed."
        )
    return UnsupportedRepository(
        f"turnback cannot read this repository's index ({error}). Nothing was recorded or changed."
    )


def is_unreadable_index(error: Exception) -> bool:
    """libgit2's refusal of an index file's layout (not a file changing while read)."""
    return "unsupported mandatory extension" in str(error)
