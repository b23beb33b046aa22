"""Where turnback's time goes: cProfile of the operations whose targets are missed.

    python bench/profile_ops.py [SIZE]      # default 10000; uses the generated repository

Profiles, in process on a scratch copy of the generated repository:
  1. a watcher capture of 10 changed files (the server's path), and the same capture
     timed with libgit2's fsync of objects on and off (turnback turns it on);
  2. a full-scan capture with 0 changed files after a session touched 2,000 files;
  3. a cold first capture;
  4. the diff of a turn that changed 50 files of ~2,000 lines;
  5. undo and redo of a sealed turn of 1,000 files.
Each prints the functions with the most own time (tottime) and cumulative time.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "server"))
DATA_DIR = tempfile.mkdtemp(prefix="turnback-profile-")
os.environ["TURNBACK_DATA_DIR"] = DATA_DIR

import pygit2  # noqa: E402
from generate import REPOS_DIR, cached_repo, work_copy  # noqa: E402
from pygit2.enums import Option  # noqa: E402

from turnback.engine import Engine, RestoreOptions  # noqa: E402

SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 10000


def scattered_files(work: Path) -> list[str]:
    """The generated source files in a fixed random order: changes spread over the tree,
    as in run.py."""
    files = sorted(str(p.relative_to(work)) for p in work.glob("pkg*/**/file_*.py") if p.is_file())
    random.Random(1).shuffle(files)
    return files


def line_appender(work: Path, note: str) -> Callable[[list[str]], None]:
    """Appends a numbered comment line to each file given (a new number per call)."""
    calls = [0]

    def mutate(paths: list[str]) -> None:
        calls[0] += 1
        for rel in paths:
            with open(work / rel, "a") as fh:
                fh.write(f"# {note} {calls[0]}\n")

    return mutate


def edit_big_modules(work: Path) -> None:
    """The diff benchmark's turn: ten edited hunks in each of the 50 big modules."""
    for i in range(50):
        path = work / f"src/big/module_{i:02d}.py"
        lines = path.read_bytes().split(b"\n")
        step = len(lines) // 10
        for hunk in range(10):
            for k in range(hunk * step + 5, hunk * step + 15):
                lines[k] += b"  # edited"
        path.write_bytes(b"\n".join(lines))


def profile(title: str, fn, top: int = 12) -> None:  # noqa: ANN001
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.enable()
    fn()
    prof.disable()
    took = time.perf_counter() - start
    print(f"\n=== {title}: {took * 1000:.0f} ms (under the profiler) ===")
    for order in ("tottime", "cumulative"):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(order).print_stats(top)
        lines = buf.getvalue().splitlines()
        start_at = next(i for i, line in enumerate(lines) if "ncalls" in line)
        print(f"--- by {order}")
        print("\n".join(lines[start_at : start_at + top + 1]))


def main() -> None:
    src, _ = cached_repo(SIZE)
    work = REPOS_DIR / f"profile-{SIZE}"
    print(f"copying {src.name} to {work} ...", file=sys.stderr)
    work_copy(src, work)
    files = scattered_files(work)
    mutate = line_appender(work, "profile edit")

    # 3. cold first capture
    engine = Engine(str(work))
    profile("cold first capture (full scan, private index seeded from the user's)", engine.capture)

    # 1. watcher capture, 10 changed
    engine.enable_watcher()
    engine.capture(label="full scan before watching")
    ten = files[:10]
    mutate(ten)
    profile("watcher capture, 10 changed files", lambda: engine.capture(label="w"))
    for fsync in (True, False):
        pygit2.option(Option.ENABLE_FSYNC_GITDIR, fsync)
        times = []
        for _ in range(7):
            mutate(ten)
            start = time.perf_counter()
            engine.capture(label="w")
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        print(
            f"watcher capture, 10 changed, libgit2 fsync {'on ' if fsync else 'off'}: "
            f"p50 {times[len(times) // 2]:.0f} ms (samples {', '.join(f'{t:.0f}' for t in times)})"
        )
    pygit2.option(Option.ENABLE_FSYNC_GITDIR, True)  # as turnback ships
    engine.close()

    # 2. full scan late in a session
    engine = Engine(str(work))
    engine.capture(label="warm")
    for chunk in range(0, min(2000, len(files)), 500):
        mutate(files[chunk : chunk + 500])
        engine.capture(label="touch")
    engine.capture(label="settle")
    profile("full-scan capture, 0 changed, after 2,000 files were captured changed", engine.capture)

    # 4. diff of 50 files x ~2,000 lines
    engine.capture(label="diff turn")
    edit_big_modules(work)
    turn = engine.capture(phase="after").number
    profile("diff of a turn of 50 files x ~2,000 lines", lambda: engine.diff(turn=turn))

    # 5. undo / redo of 1,000 files
    thousand = files[2000:3000] if len(files) >= 3000 else files[:1000]
    engine.capture(label="undo turn")
    mutate(thousand)
    engine.capture(phase="after")
    profile("undo of a sealed turn of 1,000 files", lambda: engine.undo(options=RestoreOptions()))
    profile("redo of that turn", lambda: engine.redo(options=RestoreOptions()))
    engine.close()
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(DATA_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
