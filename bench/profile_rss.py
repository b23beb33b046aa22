"""Where the server's memory goes: RSS after each kind of operation of a bench session.

    python bench/profile_rss.py [SIZE] [--variant NAME]   # default 100000

One Engine with the watcher on (what the server holds), on a scratch copy of the
generated repository, through the operations of the benchmark's LSP session: a cold
capture, watcher captures of 10 files, 1,000-file captures, a full-scan fallback after
the user's index was rewritten, undo/redo of 1,000 files, the 50-file diff, then a long
session of 300 turns of 10 files (memory must not grow per turn). After each:
`VmRSS`, its anonymous part (malloc: libgit2's indexes and object cache, Python) and
its file part (mapped pack files), and `VmHWM`, from /proc/self/status.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "server"))
os.environ["TURNBACK_DATA_DIR"] = tempfile.mkdtemp(prefix="turnback-rss-")

import pygit2  # noqa: E402
from generate import REPOS_DIR, cached_repo, work_copy  # noqa: E402
from profile_ops import edit_big_modules, line_appender, scattered_files  # noqa: E402

from turnback.engine import Engine  # noqa: E402

SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 100000


def status() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0]) // 1024
    return out


_last = [time.perf_counter()]


def report(step: str) -> None:
    s = status()
    cached = pygit2.settings.cached_memory[0] // 2**20
    took = time.perf_counter() - _last[0]
    print(
        f"{step:<47} RSS {s['VmRSS']:>4} MiB  anon {s['RssAnon']:>4}  file {s['RssFile']:>4}"
        f"  HWM {s['VmHWM']:>4}  object cache {cached:>3}  {took:6.1f} s",
        flush=True,
    )
    _last[0] = time.perf_counter()


def main() -> None:
    src, _ = cached_repo(SIZE)
    work = REPOS_DIR / f"rss-{SIZE}"
    work_copy(src, work)
    files = scattered_files(work)
    mutate = line_appender(work, "rss edit")

    report("start (imports)")
    engine = Engine(str(work))  # opening the workspace applies turnback's libgit2 limits
    if os.environ.get("RSS_WINDOW_MIB"):  # try other pack window settings than turnback's
        pygit2.settings.mwindow_size = int(os.environ["RSS_WINDOW_MIB"]) * 2**20
        pygit2.settings.mwindow_mapped_limit = int(os.environ["RSS_LIMIT_MIB"]) * 2**20
    if os.environ.get("RSS_CACHE_MIB"):  # and another object cache bound
        pygit2.settings.cache_max_size(int(os.environ["RSS_CACHE_MIB"]) * 2**20)
    limits = pygit2.settings
    print(
        f"pack windows {limits.mwindow_size >> 20} MiB, mapped at most"
        f" {limits.mwindow_mapped_limit >> 20} MiB;"
        f" object cache {limits.cached_memory[1] >> 20} MiB"
    )
    engine.enable_watcher()
    engine.capture(label="cold")
    report("cold capture")

    def agent_turn(label: str, paths: list[str]) -> None:
        engine.capture(label=label)
        mutate(paths)
        engine.capture(phase="after")

    for i in range(15):
        agent_turn(f"w{i}", files[i * 10 : i * 10 + 10])
    report("15 watcher turns of 10 files")
    for i in range(3):
        agent_turn(f"k{i}", files[1000 + i * 1000 : 2000 + i * 1000])
    report("3 turns of 1,000 files")
    for _ in range(3):
        time.sleep(1.1)
        subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=work, check=False)
        os.utime(work / ".git" / "index")
        mutate(files[:10])
        engine.capture(label="fallback")
    report("3 full-scan fallbacks (user's index rewritten)")
    for _ in range(3):
        agent_turn("u", files[5000:6000])
        engine.undo()
        engine.redo()
    report("3 undo+redo of 1,000 files")
    engine.capture(label="diff")
    edit_big_modules(work)
    turn = engine.capture(phase="after").number
    for _ in range(3):
        engine.diff(turn=turn)
    report("3 diffs of 50 files")
    for i in range(15):
        agent_turn(f"x{i}", files[200 + i * 10 : 210 + i * 10])
    report("15 more watcher turns")
    for hundred in range(3):  # a long session: no growth per turn
        for i in range(100):
            at = 300 + (hundred * 100 + i) * 10
            agent_turn(f"long{i}", files[at : at + 10])
        report(f"{hundred + 1}00 more watcher turns")
    engine.close()


if __name__ == "__main__":
    main()
