"""What flushing its objects costs a full-scan capture on linux's tree (issue 12).

    python bench/fsync_probe.py [SAMPLES]      # default 15 of each

In process, on a scratch copy of the cached linux tree (bench/real_tree.py): the same
10 changed C files rewritten before each capture, then a full-scan capture with libgit2's
fsync of every object and its folder on (turnback's setting: a snapshot survives a power
loss) and off (git's default: `core.fsync` flushes no loose object), alternated, after a
0.4 s pause each. Prints the medians and the samples in order of size. A probe: turnback
never turns the flush off.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "server"))
os.environ["TURNBACK_DATA_DIR"] = tempfile.mkdtemp(prefix="turnback-fsyncprobe-")

import pygit2  # noqa: E402
from generate import REPOS_DIR, work_copy  # noqa: E402
from pygit2.enums import Option  # noqa: E402
from real_tree import linux_repo  # noqa: E402

from turnback.config import Settings  # noqa: E402
from turnback.engine import Engine  # noqa: E402

SAMPLES = int(sys.argv[1]) if len(sys.argv) > 1 else 15


def main() -> None:
    source, _stats = linux_repo()
    work = REPOS_DIR / "fsync-probe"
    work_copy(source, work)
    files = sorted(str(p.relative_to(work)) for p in (work / "drivers").glob("**/*.c"))
    random.Random(1).shuffle(files)
    changed = files[:10]
    original = {rel: (work / rel).read_bytes() for rel in changed}
    engine = Engine(str(work), Settings())
    engine.capture(label="warm-up")
    took: dict[bool, list[float]] = {True: [], False: []}
    for sample in range(SAMPLES):
        for flushed in (True, False):
            pygit2.option(Option.ENABLE_FSYNC_GITDIR, flushed)
            for rel in changed:
                (work / rel).write_bytes(original[rel] + f"# probe {sample} {flushed}\n".encode())
            time.sleep(0.4)
            start = time.perf_counter()
            engine.capture(label="probe")
            took[flushed].append((time.perf_counter() - start) * 1000)
    pygit2.option(Option.ENABLE_FSYNC_GITDIR, True)
    engine.close()
    print(f"load: {os.getloadavg()}")
    for flushed, samples in took.items():
        name = "objects flushed (turnback)" if flushed else "not flushed (git's default)"
        ordered = sorted(round(s) for s in samples)
        print(f"{name}: median {statistics.median(samples):.1f} ms, sorted {ordered}")


if __name__ == "__main__":
    main()
