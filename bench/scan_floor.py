"""How much of a full-scan capture on linux's tree is the work-tree walk (issue 12).

    python bench/scan_floor.py [SAMPLES] [SIZE]      # default 9 of each, linux's tree

In process, on a scratch copy of the cached linux tree (bench/real_tree.py), or of the
generated repository of SIZE files; the same 10 tracked files (C files under `drivers/`
on linux's tree) rewritten before each sample that changes files, a 0.4 s pause before
each, the kinds alternated:

1. baseline (a), git's temporary-index method, 10 changed (as run.py times it);
2. turnback's full-scan capture, 10 changed, and 0 changed; and 10 changed with the
   special-file walk (core/specialfiles.py, a Python thread beside libgit2's two) left
   out, to show what it takes from the walk on two cores (a probe: turnback never
   leaves it out);
3. the walk alone: the scanner's libgit2 work-tree diff of its stat cache, as a full
   scan runs it (two threads on this machine), nothing changed;
4. what a walk of turnback's own, in Python, would cost before any comparison: an
   `lstat` of every tracked file, relative to its directory's descriptor (the cheaper
   way), on one and on two threads; and an `os.scandir` of every directory.

The 0.7× bound of issue 12 less the walk alone is what turnback may spend on hashing,
trees, flushes, refs and the timeline. Prints the medians and the samples in order.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "server"))
os.environ["TURNBACK_DATA_DIR"] = tempfile.mkdtemp(prefix="turnback-scanfloor-")

import pygit2  # noqa: E402
from baseline_a import temp_index_snapshot  # noqa: E402
from generate import REPOS_DIR, cached_repo, work_copy  # noqa: E402
from real_tree import linux_repo  # noqa: E402

from turnback.config import Settings  # noqa: E402
from turnback.core import specialfiles  # noqa: E402
from turnback.engine import Engine  # noqa: E402
from turnback.snapshot.scanner import SCAN_FLAGS  # noqa: E402
from turnback.snapshot.workdir_scan import start_workdir_diff  # noqa: E402

SAMPLES = int(sys.argv[1]) if len(sys.argv) > 1 else 9
SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else None
PAUSE = 0.4


class _NoSpecialFileWalk:
    """Stands in for a special-file walk that found nothing."""

    def wait(self) -> None:
        pass

    def outcome(self) -> specialfiles.WalkOutcome:
        return specialfiles.WalkOutcome([], [], [])


def without_special_walk(capture: Callable[[], object]) -> None:
    real = specialfiles.SpecialFiles.start
    specialfiles.SpecialFiles.start = lambda _self, _excluded, _pool=None: _NoSpecialFileWalk()  # type: ignore[method-assign,assignment,return-value]
    try:
        capture()
    finally:
        specialfiles.SpecialFiles.start = real  # type: ignore[method-assign]


def tracked_by_directory(work: Path) -> list[tuple[bytes, list[bytes]]]:
    """Every tracked path of the user's index, grouped by its directory."""
    by_dir: dict[bytes, list[bytes]] = {}
    for entry in pygit2.Index(str(work / ".git" / "index")):
        folder, _, name = os.fsencode(entry.path).rpartition(b"/")
        by_dir.setdefault(folder, []).append(name)
    return list(by_dir.items())


def lstat_by_descriptor(root: Path, groups: list[tuple[bytes, list[bytes]]]) -> None:
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for folder, names in groups:
            fd = os.open(folder or b".", os.O_RDONLY | os.O_DIRECTORY, dir_fd=root_fd)
            try:
                for name in names:
                    os.stat(name, dir_fd=fd, follow_symlinks=False)
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)


def list_directories(root: Path, groups: list[tuple[bytes, list[bytes]]]) -> None:
    for folder, _names in groups:
        with os.scandir(os.path.join(os.fsencode(root), folder)) as entries:
            for _entry in entries:
                pass


def on_threads(work: Callable[[list], None], items: list, threads: int) -> None:
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, [items[i::threads] for i in range(threads)]))


def main() -> None:
    source, _stats = linux_repo() if SIZE is None else cached_repo(SIZE)
    work = REPOS_DIR / "scan-floor"
    work_copy(source, work)
    groups = tracked_by_directory(work)
    if SIZE is None:
        files = sorted(str(p.relative_to(work)) for p in (work / "drivers").glob("**/*.c"))
    else:
        tracked = (os.fsdecode(d + b"/" + n if d else n) for d, names in groups for n in names)
        files = sorted(f for f in tracked if not os.path.islink(work / f))
    random.Random(1).shuffle(files)
    changed = files[:10]
    original = {rel: (work / rel).read_bytes() for rel in changed}
    engine = Engine(str(work), Settings())
    engine.capture(label="warm-up")
    scanner = engine.scanner.root

    def walk_alone() -> None:
        index = scanner.private.index
        repos = scanner.handles.scan_repos(index)
        start_workdir_diff(repos, index, SCAN_FLAGS, str(work)).result()

    kinds: dict[str, tuple[bool, Callable[[], object]]] = {
        "(a) git's temporary index, 10 changed": (True, lambda: temp_index_snapshot(work)),
        "turnback full scan, 10 changed": (True, lambda: engine.capture(label="probe")),
        "turnback full scan, 0 changed": (False, lambda: engine.capture(label="probe")),
        "turnback full scan, 10 changed, no special-file walk": (
            True,
            lambda: without_special_walk(lambda: engine.capture(label="probe")),
        ),
        "libgit2's walk alone, as a full scan runs it": (False, walk_alone),
        "Python: lstat every tracked file by directory, 1 thread": (
            False,
            lambda: lstat_by_descriptor(work, groups),
        ),
        "Python: the same on 2 threads": (
            False,
            lambda: on_threads(lambda part: lstat_by_descriptor(work, part), groups, 2),
        ),
        "Python: os.scandir every directory, 1 thread": (
            False,
            lambda: list_directories(work, groups),
        ),
    }
    took: dict[str, list[float]] = {name: [] for name in kinds}
    for sample in range(SAMPLES):
        for name, (rewrite, run) in kinds.items():
            if rewrite:
                for rel in changed:
                    (work / rel).write_bytes(original[rel] + f"// probe {sample}\n".encode())
            time.sleep(PAUSE)
            start = time.perf_counter()
            run()
            took[name].append((time.perf_counter() - start) * 1000)
    engine.close()
    print(f"{len(groups)} directories with tracked files; load {os.getloadavg()[0]:.2f}")
    for name, samples in took.items():
        ordered = sorted(round(s, 1) for s in samples)
        print(f"  {name}: median {statistics.median(samples):.1f} ms, sorted {ordered}")
    baseline = statistics.median(took["(a) git's temporary index, 10 changed"])
    walk = statistics.median(took["libgit2's walk alone, as a full scan runs it"])
    print(
        f"0.7x (a) = {0.7 * baseline:.1f} ms; the walk alone = {walk / baseline:.2f}x (a); "
        f"left for the rest of a capture: {0.7 * baseline - walk:.1f} ms"
    )


if __name__ == "__main__":
    main()
