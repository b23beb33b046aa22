"""The work tree compared with the stat cache, on every core.

libgit2's work-tree diff is one thread of `lstat` and `readdir` calls, where git's own
`add -A` preloads the index with parallel `lstat`s. This splits the work tree into groups
of paths of about equal weight (the tracked files below them, counted in the index) and
diffs each group on its own thread. libgit2 runs with the GIL released; each thread has
its own Repository object (libgit2 objects are not shared between threads) and all read
one index that nothing writes meanwhile. The groups name every path the work tree holds
and every path the index tracks, each in exactly one group, so the deltas together are
the one-thread diff's (tests/engine/test_workdir_scan.py compares them).
"""

from __future__ import annotations

import os
import stat
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait

import pygit2

from ..core.pygit2_internals import diff_index_to_workdir
from ..core.sorted_index import children, first_not_below

#: Below this many tracked files one thread is as fast: starting the others costs more.
PARALLEL_FROM = 5_000
#: More threads than this stop paying on the machines turnback runs on (disks, not CPUs).
MAX_THREADS = 4
#: Groups per thread: a thread that finishes early takes the next, so one slow part of the
#: tree (many directories, few files) does not leave the other threads idle.
GROUPS_PER_THREAD = 3
#: A group may outweigh the fair share by this factor before its heaviest directory is split.
SLACK = 1.25
#: How deep a heavy directory is split into its children before the groups are taken as is.
MAX_DEPTH = 4

_pool: ThreadPoolExecutor | None = None


def threads() -> int:
    return max(1, min(MAX_THREADS, os.cpu_count() or 1))


def executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(threads(), thread_name_prefix="turnback-scan")
    return _pool


def _names_on_disk(root: str, prefix: bytes) -> list[bytes]:
    try:
        with os.scandir(os.path.join(root, os.fsdecode(prefix))) as entries:
            return [os.fsencode(e.name) for e in entries if prefix or e.name != ".git"]
    except OSError:
        return []


def _is_real_dir(root: str, rel: bytes) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(os.path.join(root, os.fsdecode(rel))).st_mode)
    except OSError:
        return False


def plan_groups(root: str, index: pygit2.Index, parts: int) -> list[list[bytes]] | None:
    """Path lists of about equal weight, or None when one thread should do it all."""
    total = len(index)
    if parts < 2 or total < PARALLEL_FROM:
        return None
    weights: dict[bytes, int] = {}
    _add_children(root, index, b"", 0, total, weights)
    fair = total / parts
    for _ in range(MAX_DEPTH):
        heaviest = max(weights, key=weights.__getitem__)
        if weights[heaviest] <= fair * SLACK or not _is_real_dir(root, heaviest):
            break
        prefix = heaviest + b"/"
        low = first_not_below(index, prefix)
        high = first_not_below(index, heaviest + b"0", low)
        del weights[heaviest]
        _add_children(root, index, prefix, low, high, weights)
    groups: list[list[bytes]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for path in sorted(weights, key=lambda p: (-weights[p], p)):
        lightest = loads.index(min(loads))
        groups[lightest].append(path)
        loads[lightest] += weights[path]
    ordered = sorted(range(parts), key=lambda i: -loads[i])  # heaviest first: taken first
    return [sorted(groups[i]) for i in ordered if groups[i]] or None


def _add_children(
    root: str, index: pygit2.Index, prefix: bytes, low: int, high: int, out: dict[bytes, int]
) -> None:
    """Every name below `prefix`, tracked or on disk, weighted by its tracked files (min 1)."""
    for name, count in children(index, prefix, low, high).items():
        out[prefix + name] = count
    for name in _names_on_disk(root, prefix):
        out.setdefault(prefix + name, 1)


#: A group's paths; None stands for the whole work tree.
Group = list[bytes] | None


def _diff(
    repo: pygit2.Repository, index: pygit2.Index, flags: int, group: Group
) -> tuple[list[pygit2.DiffDelta], bool]:
    """The group's deltas, and whether libgit2 hashed a file there whose content it found
    unchanged: its stat no longer matches its entry, and no delta names it (stalestat.py)."""
    diff, hashed = diff_index_to_workdir(repo, index, flags, group)
    deltas = list(diff.deltas)
    named = sum(1 for delta in deltas if any(delta.new_file.id.raw))
    return deltas, hashed is not None and hashed > named


class PendingDiff:
    """A work-tree diff running on the pool; the caller's thread is free meanwhile."""

    def __init__(self, futures: list[Future[list[tuple[Group, list[pygit2.DiffDelta], bool]]]]):
        self._futures = futures

    def wait(self) -> None:
        """Until every thread is done (none may still read the index afterwards)."""
        wait(self._futures)

    def _results(self) -> list[tuple[Group, list[pygit2.DiffDelta], bool]]:
        self.wait()
        return [found for future in self._futures for found in future.result()]

    def result(self) -> list[pygit2.DiffDelta]:
        """The deltas in path order, or the first thread's error, once all are done."""
        deltas = [delta for _group, found, _stale in self._results() for delta in found]
        return sorted(deltas, key=lambda delta: delta.new_file.path)

    def stale_groups(self) -> list[Group]:
        """The groups where libgit2 hashed a file it then found unchanged (once done)."""
        return [group for group, _found, stale in self._results() if stale]


def start_workdir_diff(
    repos: list[pygit2.Repository], index: pygit2.Index, flags: int, root: str
) -> PendingDiff:
    """Starts the index against the work tree; `repos` (one per thread, not used by any
    other thread meanwhile) decide how many threads. Nothing may write `index` until the
    diff is done."""
    # plan_groups reads entries by position, which sorts them here if anything left them
    # unsorted: the threads' own sorts are then no-ops, never writes.
    groups = plan_groups(root, index, len(repos) * GROUPS_PER_THREAD)
    if groups is None:
        return PendingDiff([executor().submit(_whole, repos[0], index, flags)])
    queue = deque(groups)

    def work(repo: pygit2.Repository) -> list[tuple[Group, list[pygit2.DiffDelta], bool]]:
        found = []
        while True:
            try:
                group = queue.popleft()  # atomic: each group is diffed once
            except IndexError:
                return found
            found.append((group, *_diff(repo, index, flags, group)))

    return PendingDiff([executor().submit(work, repo) for repo in repos])


def _whole(
    repo: pygit2.Repository, index: pygit2.Index, flags: int
) -> list[tuple[Group, list[pygit2.DiffDelta], bool]]:
    return [(None, *_diff(repo, index, flags, None))]
