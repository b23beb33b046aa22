"""What the forked diff (server/turnback/diff/forked.py) saves, and what its child costs.

    python bench/diff_fork_probe.py [SIZE]      # default 100000; the generated repository

In process, on a scratch copy of the generated repository, with the diff benchmark's turn
(50 files x ~2,000 lines, 10 hunks each): the turn's diff alternately in one process and
with the child, 15 samples each (in the order taken, and the ratio of each pair); and
the memory of the child: its own pages (Private_Dirty: what it adds to the machine, the
rest is shared with the server) from /proc/<child>/smaps_rollup just before it exits,
and the server's VmHWM before and after.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "server"))
os.environ["TURNBACK_DATA_DIR"] = tempfile.mkdtemp(prefix="turnback-forkprobe-")

from generate import REPOS_DIR, cached_repo, work_copy  # noqa: E402
from profile_ops import edit_big_modules  # noqa: E402

from turnback.diff import forked  # noqa: E402
from turnback.engine import Engine  # noqa: E402

SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
SAMPLES = 15
ROLLUP = Path(tempfile.mkdtemp(prefix="turnback-forkprobe-rollup-")) / "child"


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def recording_child_main(real):  # noqa: ANN001, ANN201
    """The child's main, keeping its smaps_rollup once the results are made."""

    def child_main(jobs, pipe):  # noqa: ANN001, ANN202
        def last_job():  # noqa: ANN202
            ROLLUP.write_text(Path("/proc/self/smaps_rollup").read_text())
            return jobs[-1]()

        return real([*jobs[:-1], last_job], pipe)

    return child_main


def main() -> None:
    src, _ = cached_repo(SIZE)
    work = REPOS_DIR / f"forkprobe-{SIZE}"
    print(f"copying {src.name} to {work} ...", file=sys.stderr)
    work_copy(src, work)
    engine = Engine(str(work))
    engine.capture(label="diff turn")
    edit_big_modules(work)
    turn = engine.capture(phase="after").number
    default = forked.FORK_FROM_BYTES
    forked.FORK_FROM_BYTES = 1 << 60
    alone = engine.diff(turn=turn)
    before = status_kib("VmHWM")
    forked.FORK_FROM_BYTES = default
    forked._child_main = recording_child_main(forked._child_main)
    assert engine.diff(turn=turn) == alone, "the forked diff differs"
    print(f"server VmHWM before the first forked diff: {before} KiB, after: {status_kib('VmHWM')}")
    rollup = {
        line.split(":")[0]: line.split()[1]
        for line in ROLLUP.read_text().splitlines()[1:]
        if line.split(":")[0] in ("Rss", "Pss", "Private_Clean", "Private_Dirty")
    }
    print("child, just before it exits (KiB):", rollup)
    times: dict[str, list[float]] = {"one process": [], "forked child": []}
    for _ in range(SAMPLES):
        for name, limit in (("one process", 1 << 60), ("forked child", default)):
            forked.FORK_FROM_BYTES = limit
            start = time.perf_counter()
            engine.diff(turn=turn)
            times[name].append((time.perf_counter() - start) * 1000)
    pairs = zip(times["one process"], times["forked child"], strict=True)
    ratios = sorted(forked_ms / alone_ms for alone_ms, forked_ms in pairs)
    for name, samples in times.items():
        shown = ", ".join(f"{t:.0f}" for t in samples)
        print(f"diff in process, {name}: p50 {sorted(samples)[SAMPLES // 2]:.1f} ms ({shown})")
    print(f"forked / one process, sample by sample: p50 {ratios[SAMPLES // 2]:.2f}")
    print(f"load average after: {os.getloadavg()}")
    engine.close()


if __name__ == "__main__":
    main()
