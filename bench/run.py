"""turnback benchmarks: capture, undo, redo, diff, cold start, storage and memory.

    python bench/run.py                      # quick size (BENCH_SIZE=10000)
    BENCH_SIZE=100000 python bench/run.py    # the size the targets are set for

Environment:
    BENCH_SIZE      tracked files in the generated repository (default 10000)
    BENCH_SEED      generator seed (default 1)
    BENCH_REPEAT    timed samples per figure (default: 7 up to 20k files, else 5); the
                    1000-file figures take (BENCH_REPEAT + 1) // 2, at least 3
    BENCH_DIFF_REPEAT  samples of the diff (default 9: a diff costs a third of a second, and
                    a p50 of three samples follows one noisy moment of the machine)
    BENCH_COLD_REPEAT  samples of the cold first capture (default: 5 up to 20k, else 3)
    BENCH_SECTIONS  comma-separated subset of: floor,cold,capture,undo,diff,rss,growth,cli,
                    hook,dirtyundo (default: all of them)
    BENCH_TREE      linux: run on the Linux 6.1 sources of Debian's linux-source-6.1 (a
                    real tree of 78k files, bench/real_tree.py) instead of a generated one;
                    the diff section then diffs an 11-file turn of real C files
    BENCH_DIRTY_MIB unrelated dirty data written before each dirtyundo sample (default 1024)
    BENCH_GROWTH_TURNS  turns in the storage benchmark (default 100)
    BENCH_KEEP      1 keeps the scratch work tree and shadow repository after the run
    BENCH_REPOS_DIR   the repository cache and scratch copies (default bench/.repos)
    BENCH_OUTPUT_DIR  where the result files go (default bench/)
    BENCH_SERVER_WRAP  a command the LSP server runs under, to profile it: `heaptrack -o
                    FILE` (who holds the heap at its peak), `py-spy record -f raw -o FILE --`
    BENCH_FULL_GC   1 also measures storage growth after a full `git gc --prune=now`
                    (default: 1 up to 30k files, 0 above, where two full gcs cost minutes)

Everything runs in one process on one generated repository, copied from the cache
(bench/.repos/) into a scratch work tree, so every figure, turnback's and the
baselines', is measured under the same conditions in the same run. Timings are wall
clock (time.perf_counter) around the operation as a caller sees it: an LSP request
until its response arrives, an Engine call until it returns, a baseline's git
commands until the last one exits. The results go to bench/results.json and
bench/results-<size>.json; the table goes to stdout.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import platform
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "server"))

from baseline_a import GIT_ENV, temp_index_snapshot  # noqa: E402
from dirty_undo import UNDO_FILES, dirty_undo_block  # noqa: E402
from generate import REPOS_DIR, cached_repo, work_copy  # noqa: E402
from generate import git as generated_git  # noqa: E402
from git_storage import GitCommitPerTurn  # noqa: E402
from hook import HOOK_CHANGED, hook_block  # noqa: E402
from real_tree import c_sources, edit_c_file, linux_repo  # noqa: E402
from resultfiles import OUTPUT, RESULTS_DIR, result_file  # noqa: E402

TREE = os.environ.get("BENCH_TREE", "")
#: Tracked files: the generated repository's size. For the real tree, a round figure that
#: only picks the defaults below: what is printed and stored is the count of its stamp.
SIZE = int(os.environ.get("BENCH_SIZE", "78000" if TREE == "linux" else "10000"))
#: The name of this run's scratch copies and result files.
LABEL = TREE or str(SIZE)
SEED = int(os.environ.get("BENCH_SEED", "1"))
REPEAT = int(os.environ.get("BENCH_REPEAT", "7" if SIZE <= 20000 else "5"))
COLD_REPEAT = int(os.environ.get("BENCH_COLD_REPEAT", "5" if SIZE <= 20000 else "3"))
DIFF_REPEAT = int(os.environ.get("BENCH_DIFF_REPEAT", "9"))
ALL_SECTIONS = (
    "floor",
    "cold",
    "capture",
    "undo",
    "diff",
    "rss",
    "growth",
    "cli",
    "hook",
    "dirtyundo",
)
SECTIONS = tuple(
    s.strip() for s in os.environ.get("BENCH_SECTIONS", ",".join(ALL_SECTIONS)).split(",") if s
)
GROWTH_TURNS = int(os.environ.get("BENCH_GROWTH_TURNS", "100"))
FULL_GC = os.environ.get("BENCH_FULL_GC", "1" if SIZE <= 30000 else "0") == "1"
CHANGED = (0, 10, 1000)


def repeats(changed: int) -> int:
    """Samples for a figure: fewer for the 1000-file ones, which cost seconds."""
    return REPEAT if changed < 1000 else max(3, (REPEAT + 1) // 2)


RESTORED = (10, 1000)
#: Seconds the server gets, after a timed capture, for what it does once it answered (its
#: stat cache's write: ~30 ms on linux's tree), before a baseline is timed.
SETTLE_AFTER_LSP_CAPTURE = 0.3
DIFF_FILES = 50
#: The diff figure's name: the generated turn (50 files x ~2000 lines) or the real one.
DIFF_NAME = "11_real" if TREE else "50x2000"

# The turnback processes: private data directory, no git identity, no global git config.
DATA_DIR = Path(tempfile.mkdtemp(prefix="turnback-bench-data-"))
os.environ["TURNBACK_DATA_DIR"] = str(DATA_DIR)
#: A profiler the server runs under (BENCH_SERVER_WRAP); its pid is then the profiler's.
SERVER_WRAP = shlex.split(os.environ.get("BENCH_SERVER_WRAP", ""))
SERVER_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "TURNBACK_DATA_DIR": str(DATA_DIR),
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "TURNBACK_DAEMON": "off",  # the CLI figures are in-process captures; bench/hook.py has the rest
}

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from pygls.protocol import LanguageServerProtocol, default_converter  # noqa: E402
from pygls.protocol.json_rpc import JsonRPCResponseMessage  # noqa: E402

from turnback.config import Settings  # noqa: E402
from turnback.engine import Engine, RestoreOptions  # noqa: E402
from turnback.lsp.pygls_internals import server_process  # noqa: E402
from turnback.wire import to_wire  # noqa: E402


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def percentile(samples: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    data = sorted(samples)
    if len(data) == 1:
        return data[0]
    pos = (len(data) - 1) * q
    low = int(pos)
    high = min(low + 1, len(data) - 1)
    return data[low] + (data[high] - data[low]) * (pos - low)


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(samples),
        "p95": percentile(samples, 0.95),
        "min": min(samples),
        "max": max(samples),
        "n": len(samples),
    }


def git(cwd: Path, *args: str, env: dict | None = None, check: bool = True) -> str:
    """The generator's git CLI, with the baselines' environment unless told otherwise."""
    return generated_git(cwd, *args, env=env or GIT_ENV, check=check)


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "git": subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip(),
    }
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError):
        info["inotifyMaxUserWatches"] = int(
            Path("/proc/sys/fs/inotify/max_user_watches").read_text()
        )
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memTotalKiB"] = int(line.split()[1])
    with contextlib.suppress(Exception):
        import pygit2

        info["pygit2"] = pygit2.__version__
        info["libgit2"] = pygit2.LIBGIT2_VERSION
    with contextlib.suppress(Exception):
        import pygls

        info["pygls"] = getattr(pygls, "__version__", None) or _dist_version("pygls")
    with contextlib.suppress(Exception):
        fs = subprocess.run(
            ["df", "-T", str(REPOS_DIR)], capture_output=True, text=True
        ).stdout.splitlines()[-1]
        info["filesystem"] = fs.split()[1]
    return info


def product_version() -> dict[str, Any]:
    """The turnback commit measured, and whether server/ had uncommitted changes."""
    root = BENCH_DIR.parent
    out: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        out["commit"] = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "server"],
            cwd=root,
            capture_output=True,
            text=True,
        ).stdout
        out["serverUncommittedFiles"] = len(status.splitlines())
    return out


def _dist_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def proc_status(pid: int) -> dict[str, int]:
    """VmHWM / VmRSS of a process in KiB, and VmRSS split into anonymous and file pages."""
    out = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmHWM", "VmRSS", "RssAnon", "RssFile")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def inotify_watches(pid: int) -> int:
    """Inotify watches a process holds (0: the server is not watching, every capture scans)."""
    count = 0
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fdinfo"):
            with contextlib.suppress(OSError):
                text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
                count += text.count("inotify wd:")
    return count


class Bench:
    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}
        self.notes: dict[str, Any] = {}
        self.load: dict[str, list[float]] = {}
        if TREE == "linux":
            self.src, self.repo_stats = linux_repo(log=log)
        else:
            self.src, self.repo_stats = cached_repo(SIZE, SEED, log=log)
        self.work = REPOS_DIR / f"run-{LABEL}-s{SEED}"
        self.shadow = REPOS_DIR / f"shadow-{LABEL}-s{SEED}.git"
        self.touched: set[str] = set()
        self.tag = 0
        rng = random.Random(SEED)
        log(f"copying the repository to {self.work} ...")
        work_copy(self.src, self.work)
        tracked = git(self.work, "ls-files", "-s").splitlines()
        pool = sorted(
            line.split("\t", 1)[1]
            for line in tracked
            if line.startswith("100644")
            and "/file_" in line
            and not line.split("\t", 1)[1].startswith("src/big/")
        )
        if TREE == "linux":
            pool = c_sources(tracked)
        self.changed_pool = rng.sample(pool, min(1000, len(pool)))
        self.undo_pool = rng.sample(pool, min(1000, len(pool)))
        self.growth_pool = pool
        self.big_files = [f"src/big/module_{i:02d}.py" for i in range(DIFF_FILES)]
        self.rng = rng

    def sizes(self, counts: tuple[int, ...]) -> list[int]:
        """The changed-file counts this repository is large enough for (1000 needs 1000 files)."""
        return [n for n in counts if n <= len(self.changed_pool)]

    # ---- recording ------------------------------------------------------------------------

    def add(self, name: str, seconds: float) -> None:
        self.samples.setdefault(name, []).append(seconds)

    def mark_load(self, section: str) -> None:
        self.load[section] = loadavg()

    # ---- the work tree --------------------------------------------------------------------

    def original(self, rel: str) -> bytes:
        return (self.src / rel).read_bytes()

    def mutate(self, paths: list[str]) -> None:
        """Gives each path new content (the original plus a line naming this mutation)."""
        self.tag += 1
        for rel in paths:
            data = self.original(rel) + f"# bench edit {self.tag}\n".encode()
            (self.work / rel).write_bytes(data)
            self.touched.add(rel)

    def restore(self) -> None:
        """Puts every touched file back and refreshes the user's index, as `git status` would."""
        for rel in sorted(self.touched):
            (self.work / rel).write_bytes(self.original(rel))
            # The original mtime too, so that no index entry is racily clean.
            st = (self.src / rel).stat()
            os.utime(self.work / rel, ns=(st.st_atime_ns, st.st_mtime_ns))
        self.touched.clear()
        git(self.work, "update-index", "-q", "--refresh", check=False)

    def reset_turnback(self) -> None:
        """Forgets turnback entirely: refs/turnback and .git/turnback (objects stay)."""
        refs = git(self.work, "for-each-ref", "--format=%(refname)", "refs/turnback").split()
        if refs:
            subprocess.run(
                ["git", "update-ref", "--stdin"],
                input="".join(f"delete {r}\n" for r in refs),
                cwd=self.work,
                env=GIT_ENV,
                text=True,
                check=True,
            )
        shutil.rmtree(self.work / ".git" / "turnback", ignore_errors=True)

    def forget_everything(self) -> None:
        """`reset_turnback`, and every object written since the copy (the source is packed):
        loose objects, packs the source does not have, and the baselines' refs."""
        self.reset_turnback()
        refs = git(self.work, "for-each-ref", "--format=%(refname)", "refs/bench").split()
        for ref in refs:
            git(self.work, "update-ref", "-d", ref)
        objects = self.work / ".git" / "objects"
        for fanout in objects.glob("[0-9a-f][0-9a-f]"):
            shutil.rmtree(fanout)
        original = {p.name for p in (self.src / ".git" / "objects" / "pack").iterdir()}
        for path in (objects / "pack").iterdir():
            if path.name not in original:
                path.unlink()

    # ---- baselines ------------------------------------------------------------------------

    def baseline_a(self, flushed: bool = False) -> float:
        """Hidden-ref method: temp index seeded from the user's, add -A, write-tree,
        commit-tree (baseline_a.py)."""
        return temp_index_snapshot(self.work, flushed)

    def baseline_b(self) -> float:
        """`git stash create` (tracked changes only: it never captures untracked files)."""
        start = time.perf_counter()
        git(self.work, "stash", "create", "snapshot")
        return time.perf_counter() - start

    def shadow_git(self, *args: str) -> str:
        return git(
            self.work,
            f"--git-dir={self.shadow}",
            f"--work-tree={self.work}",
            *args,
        )

    def baseline_c(self, first: bool) -> float:
        """Shadow-repository method: `git add . && git commit` in a separate git dir."""
        if first and self.shadow.exists():
            shutil.rmtree(self.shadow)
        start = time.perf_counter()
        if first:
            git(self.work, "init", "-q", "--bare", str(self.shadow))
        self.shadow_git("add", "-A", ".")
        self.shadow_git("commit", "-q", "--no-verify", "--allow-empty", "-m", "checkpoint")
        return time.perf_counter() - start

    # ---- floor ----------------------------------------------------------------------------

    def floor(self) -> None:
        self.mark_load("floor")

        def py_walk() -> int:
            count = 0
            stack = [str(self.work)]
            while stack:
                top = stack.pop()
                with os.scandir(top) as entries:
                    for entry in entries:
                        if entry.name == ".git" and top == str(self.work):
                            continue
                        entry.stat(follow_symlinks=False)  # an lstat per entry
                        count += 1
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
            return count

        cmd = "find . -path ./.git -prune -o -printf '%s %T@ %m\\n' > /dev/null"
        for _ in range(REPEAT):
            start = time.perf_counter()
            entries = py_walk()
            self.add("floor.python_scandir_lstat", time.perf_counter() - start)
            start = time.perf_counter()
            subprocess.run(cmd, shell=True, cwd=self.work, check=True)
            self.add("floor.find_printf", time.perf_counter() - start)
        self.notes["floorEntries"] = entries

    # ---- cold -----------------------------------------------------------------------------

    async def cold(self) -> None:
        """First captures in a repository turnback never saw, its objects included.

        Each sample starts with none of the objects a snapshot writes (the untracked
        files' blobs, the trees above them): a later sample would otherwise find them
        written by the one before, and write nothing. Baseline (a) runs from the same
        state (`cold.baseline_a_first`), so both write the same new objects.
        """
        self.mark_load("cold")
        progress_seen = []
        for _ in range(COLD_REPEAT):
            self.forget_everything()
            async with Server(self.work) as server:
                started = time.perf_counter()
                await server.call("snapshot/capture", {"label": "cold"})
                self.add("cold.lsp", time.perf_counter() - started)
                self.add("cold.lsp_server_start", server.startup)
                progress_seen.append(server.progress_summary(started))
                self.notes.setdefault("coldServerVmHWMKiB", []).append(
                    proc_status(server.pid).get("VmHWM")
                )
            self.forget_everything()
            async with Server(self.work, settle=0) as server:
                # Sent right after `initialized`: it waits for the watch's setup.
                started = time.perf_counter()
                await server.call("snapshot/capture", {"label": "cold"})
                self.add("cold.lsp_at_once", time.perf_counter() - started)
            self.forget_everything()
            start = time.perf_counter()
            engine = Engine(str(self.work), Settings())
            engine.capture(label="cold")
            self.add("cold.engine", time.perf_counter() - start)
            engine.close()  # its unpacking thread must not race forget_everything
            self.forget_everything()
            self.add("cold.baseline_a_first", self.baseline_a())
        self.notes["coldProgress"] = progress_seen
        self.forget_everything()
        for _ in range(1 if SIZE >= 10000 else 3):
            self.add("cold.baseline_c_first", self.baseline_c(first=True))

    # ---- block 1: the real server over LSP ------------------------------------------------

    async def lsp_block(self) -> None:
        # Each front starts from the same state: turnback never saw the repository.
        self.reset_turnback()
        async with Server(self.work) as server:
            rss = self.notes.setdefault("serverRssTimeline", {})
            rss["started"] = proc_status(server.pid)
            await server.call("snapshot/capture", {"label": "warm-up"})
            rss["afterFirstCapture"] = proc_status(server.pid)
            if not self.shadow.exists():
                self.baseline_c(first=True)
            if "capture" in SECTIONS:
                await self.lsp_captures(server)
                rss["afterCaptures"] = proc_status(server.pid)
            if "undo" in SECTIONS:
                self.mark_load("undo.lsp")
                for n in self.sizes(RESTORED):
                    paths = self.undo_pool[:n]
                    for measured in [False] + [True] * repeats(n):
                        await server.call("snapshot/capture", {"label": f"turn {self.tag}"})
                        self.mutate(paths)
                        await server.call("snapshot/capture", {"phase": "after"})
                        start = time.perf_counter()
                        undone = await server.call("snapshot/undo", {})
                        took_undo = time.perf_counter() - start
                        start = time.perf_counter()
                        redone = await server.call("snapshot/redo", {})
                        took_redo = time.perf_counter() - start
                        assert len(undone["files"]) == n and len(redone["files"]) == n, (
                            undone["message"],
                            redone["message"],
                        )
                        if measured:
                            self.add(f"undo.lsp.{n}", took_undo)
                            self.add(f"redo.lsp.{n}", took_redo)
                    log(f"  undo/redo over LSP, {n} files: done")
                self.restore()
                rss["afterUndoRedo"] = proc_status(server.pid)
            if "diff" in SECTIONS:
                self.mark_load("diff.lsp")
                turn = await self.diff_turn(lambda m, p: server.call(m, p))
                rss["beforeDiff"] = proc_status(server.pid)  # the peak: the turn, or its diff
                for measured in [False] + [True] * DIFF_REPEAT:
                    start = time.perf_counter()
                    result = await server.call("snapshot/diff", {"turn": turn})
                    took = time.perf_counter() - start
                    if measured:
                        self.add(f"diff.lsp.{DIFF_NAME}", took)
                self.notes["diffFiles"] = len(result["files"])
                self.notes["diffLines"] = sum(
                    f["additions"] + f["deletions"] for f in result["files"]
                )
                self.notes["diffResponseBytes"] = len(json.dumps(result))
                self.restore()
            self.notes["serverInotifyWatches"] = inotify_watches(server.pid)
            rss["end"] = proc_status(server.pid)
            if "rss" in SECTIONS:
                self.notes["serverRss"] = proc_status(server.pid)
                self.notes["serverRssCovers"] = (
                    "the long-lived server of the LSP block: warm-up, captures, undo/redo, diff"
                )

    async def lsp_captures(self, server: Server) -> None:
        """Captures over LSP interleaved with baselines (a) and (c); then (b) on its own.

        `git stash create` rewrites the user's index, and a changed user index sends the
        server's next capture down its full-scan fallback; so (b) runs in its own loop,
        and that fallback is measured as its own figure below.
        """
        self.mark_load("capture.lsp")
        for n in self.sizes(CHANGED):
            paths = self.changed_pool[:n]
            for measured in [False] + [True] * repeats(n):
                self.mutate(paths)
                start = time.perf_counter()
                await server.call("snapshot/capture", {"label": f"bench {self.tag}"})
                took = time.perf_counter() - start
                if measured:
                    self.add(f"capture.lsp.{n}", took)
                # The server's stat cache write, after it answered, must not slow the
                # baselines down: an agent's next turn comes seconds later, not at once.
                await asyncio.sleep(SETTLE_AFTER_LSP_CAPTURE)
                for name, method in (
                    ("a", self.baseline_a),
                    ("c_later", lambda: self.baseline_c(first=False)),
                ):
                    self.mutate(paths)
                    took = method()
                    if measured:
                        self.add(f"capture.baseline_{name}.{n}", took)
            for measured in [False] + [True] * repeats(n):
                self.mutate(paths)
                took = self.baseline_b()
                if measured:
                    self.add(f"capture.baseline_b.{n}", took)
            await server.call("snapshot/capture", {"label": "absorb the index change"})
            log(f"  capture over LSP, {n} changed: done")
        # The watcher's fallback: a git command rewrote the user's index (here `git
        # update-index --refresh` after a file's mtime changed, as `git status` does).
        paths = self.changed_pool[:10]
        index = self.work / ".git" / "index"
        rewritten = 0
        for measured in [False] + [True] * REPEAT:
            self.mutate(paths)
            before = index.stat().st_mtime_ns
            os.utime(self.work / self.undo_pool[-1])  # content unchanged, stat changed
            git(self.work, "update-index", "-q", "--refresh", check=False)
            rewritten += index.stat().st_mtime_ns != before
            start = time.perf_counter()
            await server.call("snapshot/capture", {"label": f"bench {self.tag}"})
            took = time.perf_counter() - start
            if measured:
                self.add("capture.lsp.10_index_rewritten", took)
        self.notes["userIndexRewrittenBeforeFallbackCaptures"] = rewritten
        self.restore()

    async def diff_turn(self, call: Callable[[str, dict], Any]) -> int:
        """A sealed turn that changed 50 files of ~2,000 lines (10 hunks of 10 lines each);
        on the real tree, 10 C files edited (a few lines each) and one new file."""
        await call("snapshot/capture", {"label": "diff turn"})
        if TREE:
            for rel in self.undo_pool[-10:]:
                (self.work / rel).write_bytes(edit_c_file(self.original(rel), 1))
                self.touched.add(rel)
            (self.work / "drivers" / "bench_agent_new.c").write_bytes(
                edit_c_file(self.original(self.undo_pool[-11]), 2)
            )
            sealed = await call("snapshot/capture", {"phase": "after"})
            (self.work / "drivers" / "bench_agent_new.c").unlink()
            return sealed["turn"]
        for rel in self.big_files:
            lines = self.original(rel).split(b"\n")
            step = len(lines) // 10
            for hunk in range(10):
                for k in range(hunk * step + 5, hunk * step + 15):
                    lines[k] = lines[k] + b"  # edited by the agent"
            (self.work / rel).write_bytes(b"\n".join(lines))
            self.touched.add(rel)
        sealed = await call("snapshot/capture", {"phase": "after"})
        return sealed["turn"]

    # ---- block 2: the engine in process ---------------------------------------------------

    def engine_block(self) -> None:
        self.reset_turnback()
        engine = Engine(str(self.work), Settings())
        engine.capture(label="warm-up")
        if "capture" in SECTIONS:
            self.mark_load("capture.engine")
            for n in self.sizes(CHANGED):
                paths = self.changed_pool[:n]
                for measured in [False] + [True] * repeats(n):
                    self.mutate(paths)
                    start = time.perf_counter()
                    engine.capture(label=f"bench {self.tag}")
                    took = time.perf_counter() - start
                    if measured:
                        self.add(f"capture.engine.{n}", took)
                    engine.settle()  # its stat cache's write must not slow (a) down
                    self.mutate(paths)
                    took = self.baseline_a()
                    if measured:
                        self.add(f"capture.engine_baseline_a.{n}", took)
                    if n == 10:
                        self.mutate(paths)
                        took = self.baseline_a(flushed=True)
                        if measured:
                            self.add(f"capture.engine_baseline_a_flushed.{n}", took)
                log(f"  capture in process, {n} changed: done")
            self.restore()
        if "undo" in SECTIONS:
            self.mark_load("undo.engine")
            for n in self.sizes(RESTORED):
                paths = self.undo_pool[:n]
                for measured in [False] + [True] * repeats(n):
                    engine.capture(label=f"turn {self.tag}")
                    self.mutate(paths)
                    engine.capture(phase="after")
                    start = time.perf_counter()
                    undone = engine.undo(options=RestoreOptions())
                    took_undo = time.perf_counter() - start
                    start = time.perf_counter()
                    redone = engine.redo(options=RestoreOptions())
                    took_redo = time.perf_counter() - start
                    assert len(undone.files) == n and len(redone.files) == n
                    if measured:
                        self.add(f"undo.engine.{n}", took_undo)
                        self.add(f"redo.engine.{n}", took_redo)
                log(f"  undo/redo in process, {n} files: done")
            self.restore()
        if "dirtyundo" in SECTIONS:
            dirty_undo_block(self, engine, RestoreOptions(), REPEAT)
            log("  undo/redo with 1 GiB of unrelated dirty data: done")
        if "diff" in SECTIONS:
            self.mark_load("diff.engine")

            async def call(method: str, params: dict) -> Any:
                return to_wire(engine.capture(**{k: v for k, v in params.items()}))

            turn = asyncio.run(self.diff_turn(call))
            # A large diff forks (diff/forked.py), and a fork costs with the process's
            # memory: this process's is the bench's own, not a server's.
            self.notes["diffEngineProcessStatus"] = proc_status(os.getpid())
            for measured in [False] + [True] * DIFF_REPEAT:
                start = time.perf_counter()
                engine.diff(turn=turn)
                took = time.perf_counter() - start
                if measured:
                    self.add(f"diff.engine.{DIFF_NAME}", took)
            self.restore()
        if "cli" in SECTIONS:
            self.mark_load("cli")
            paths = self.changed_pool[:10]
            cmd = [sys.executable, "-m", "turnback", "capture", "-C", str(self.work)]
            for measured in [False] + [True] * max(3, REPEAT // 2):
                self.mutate(paths)
                start = time.perf_counter()
                subprocess.run(
                    cmd + ["--label", "cli"], env=SERVER_ENV, check=True, stdout=subprocess.DEVNULL
                )
                took = time.perf_counter() - start
                if measured:
                    self.add("capture.cli.10", took)
            self.restore()
        if "capture" in SECTIONS:
            # The same 0-changed capture, now that this session has captured many changed
            # files: entries turnback hashed itself carry no stat data in its index.
            self.mark_load("capture.engine.0_late")
            self.notes["privateIndexBeforeLate"] = self.private_index_stats()
            for measured in [False] + [True] * REPEAT:
                start = time.perf_counter()
                engine.capture(label="late")
                took = time.perf_counter() - start
                if measured:
                    self.add("capture.engine.0_late", took)
        engine.close()  # before growth starts afresh, and before the next reset
        if "growth" in SECTIONS:
            # Storage is measured with the watcher on, as a long-lived server captures: the
            # objects written are the same as a full scan's, and 200 captures stay quick.
            engine = Engine(str(self.work), Settings())
            engine.enable_watcher()
            self.growth(engine)
            engine.close()

    def private_index_stats(self) -> dict[str, int]:
        """Entries of turnback's private index, and how many carry no stat data (size 0)."""
        env = {**GIT_ENV, "GIT_INDEX_FILE": str(self.work / ".git" / "turnback" / "index")}
        out = git(self.work, "ls-files", "--debug", env=env, check=False)
        entries = out.count("\n  ctime: ")
        no_stat = out.count("\n  mtime: 0:0\n")
        return {"entries": entries, "entriesWithoutStat": no_stat}

    # ---- storage growth -------------------------------------------------------------------

    def odb_usage(self) -> dict[str, Any]:
        objects = self.work / ".git" / "objects"
        loose: dict[str, int] = {}
        for sub in objects.iterdir():
            if len(sub.name) == 2 and sub.is_dir():
                for f in sub.iterdir():
                    loose[sub.name + f.name] = f.stat().st_size
        packs = sum(
            p.stat().st_size for p in (objects / "pack").iterdir() if p.suffix in (".pack", ".idx")
        )
        return {"loose": loose, "looseBytes": sum(loose.values()), "packBytes": packs}

    def classify(
        self, oids: list[str], content_ids: set[str], loose: dict[str, int]
    ) -> dict[str, Any]:
        if not oids:
            return {}
        out = subprocess.run(
            ["git", "cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)"],
            input="\n".join(oids) + "\n",
            cwd=self.work,
            env=GIT_ENV,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
        kinds: dict[str, dict[str, int]] = {}
        unexpected = []
        for line in out:
            if not line:
                continue
            oid, kind, size = line.split()
            if kind == "blob":
                if oid in content_ids:
                    kind = "blob (changed file content)"
                else:
                    head = git(self.work, "cat-file", "blob", oid)[:40]
                    if '"version"' in head or head.startswith("{"):
                        kind = "blob (timeline)"
                    else:
                        kind = "blob (other)"
                        unexpected.append(oid)
            entry = kinds.setdefault(kind, {"count": 0, "rawBytes": 0, "looseBytes": 0})
            entry["count"] += 1
            entry["rawBytes"] += int(size)
            entry["looseBytes"] += loose.get(oid, 0)
        return {"byKind": kinds, "unexpectedBlobs": unexpected[:20]}

    def growth(self, engine: Engine) -> None:
        """100 turns of 10 small edits: object database bytes against bytes changed."""
        self.mark_load("growth")
        log("  storage: packing what is loose first (git repack -d) ...")
        git(self.work, "repack", "-d", "-q")
        full_before = None
        if FULL_GC:
            git(self.work, "gc", "-q", "--prune=now")
            full_before = self.odb_usage()["packBytes"]
        before = self.odb_usage()
        mirror = GitCommitPerTurn(
            self.work, self.src / ".git" / "objects", REPOS_DIR / f"gitcommit-{LABEL}.git", GIT_ENV
        )
        mirror.start()
        git_seconds = 0.0
        rng = random.Random(SEED + 7)
        edit_bytes = 0
        content_bytes = 0
        content_ids: set[str] = set()
        current: dict[str, bytes] = {}
        start = time.perf_counter()
        for turn in range(GROWTH_TURNS):
            engine.capture(session="growth", label=f"growth {turn}")
            for rel in rng.sample(self.growth_pool, 10):
                data = current.get(rel) or (self.work / rel).read_bytes()
                lines = data.split(b"\n")
                k = rng.randrange(1, max(2, len(lines) - 1))
                new_line = f"value = {turn} * {rng.randrange(1000)}  # edited".encode()
                edit_bytes += len(lines[k]) + len(new_line) + 2  # a removed and an added line
                lines[k] = new_line
                data = b"\n".join(lines)
                (self.work / rel).write_bytes(data)
                self.touched.add(rel)
                current[rel] = data
                content_bytes += len(data)
                content_ids.add(git_blob_id(data))
            # git first: a blob turnback wrote already would be borrowed, not written.
            git_started = time.perf_counter()
            mirror.commit_turn(turn)
            git_seconds += time.perf_counter() - git_started
            engine.capture(session="growth", phase="after")
        took = time.perf_counter() - start - git_seconds
        git_growth = {**mirror.finish(), "seconds": git_seconds}
        # The last capture's objects are written loose once it has answered: measure the
        # repository as it settles, not a pack caught before its few milliseconds of unpacking.
        engine.unpacking.wait()
        after = self.odb_usage()
        new = sorted(set(after["loose"]) - set(before["loose"]))
        loose_growth = sum(after["loose"][o] for o in new)
        kinds = self.classify(new, content_ids, after["loose"])
        reachable_new = set(git(self.work, "rev-list", "--objects", "--all").split()) & set(new)
        git(self.work, "repack", "-d", "-q")
        repacked = self.odb_usage()
        packed_growth = repacked["packBytes"] - before["packBytes"]
        growth: dict[str, Any] = {
            "turns": GROWTH_TURNS,
            "editsPerTurn": 10,
            "captures": 2 * GROWTH_TURNS,
            "seconds": took,
            "editBytes": edit_bytes,
            "changedFileBytes": content_bytes,
            "distinctChangedContents": len(content_ids),
            "newLooseObjects": len(new),
            "newLooseReachable": len(reachable_new),
            "looseGrowthBytes": loose_growth,
            "repackGrowthBytes": packed_growth,
            "leftLooseAfterRepack": len(repacked["loose"]),
            "objects": kinds,
            "gitCommitPerTurn": git_growth,
        }
        if FULL_GC and full_before is not None:
            git(self.work, "gc", "-q", "--prune=now")
            growth["fullGcGrowthBytes"] = self.odb_usage()["packBytes"] - full_before
        self.notes["growth"] = growth
        self.restore()


class PlainResult:
    """The result type the bench client gives requests with no LSP result type."""


def plain_results_converter() -> Any:
    """pygls's converter, plus: a PlainResult response keeps its result as parsed JSON."""
    converter = default_converter()
    converter.register_structure_hook(
        PlainResult,
        lambda data, _type: JsonRPCResponseMessage(
            id=data["id"], jsonrpc="2.0", result=data["result"]
        ),
    )
    return converter


class PlainResults(LanguageServerProtocol):
    """The results of turnback's own methods stay the plain JSON an editor's `JSON.parse`
    gives. pygls's client turns every object of an untyped result into a namedtuple:
    108 ms of the 50-file diff's response (425 KB, 10,000 line objects) against 0.6 ms
    for `json.loads`, a cost of this Python client that no editor pays."""

    def get_result_type(self, method: str) -> Any:
        return super().get_result_type(method) or PlainResult


class Server:
    """`python -m turnback serve` driven by pygls's LanguageClient, as scripts/demo.py does."""

    def __init__(self, root: Path, settle: float = 0.5) -> None:
        self.root = root
        #: How long to leave the server after `initialized`, where it sets up its watch.
        self.settle = settle
        self.client = LanguageClient(
            "turnback-bench",
            "1.0",
            protocol_cls=PlainResults,
            converter_factory=plain_results_converter,
        )
        self.progress: list[tuple[float, str]] = []
        self.client.feature(types.PROGRESS)(lambda params: self._on_progress(params))
        self.client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)(lambda _p: None)
        for method in ("snapshot/didChange", "window/logMessage", "window/showMessage"):
            self.client.feature(method)(lambda _p: None)

    def _on_progress(self, params: Any) -> None:
        value = getattr(params, "value", None)
        kind = getattr(value, "kind", None) if value is not None else None
        if kind is None and isinstance(value, dict):
            kind = value.get("kind")
        self.progress.append((time.perf_counter(), str(kind)))

    def progress_summary(self, since: float) -> dict[str, Any]:
        seen = [(t, k) for t, k in self.progress if t >= since]
        return {
            "received": bool(seen),
            "begin": sum(k == "begin" for _, k in seen),
            "report": sum(k == "report" for _, k in seen),
            "end": sum(k == "end" for _, k in seen),
            "firstAfterSeconds": round(seen[0][0] - since, 3) if seen else None,
        }

    async def __aenter__(self) -> Server:
        start = time.perf_counter()
        await self.client.start_io(
            *SERVER_WRAP, sys.executable, "-m", "turnback", "serve", env=SERVER_ENV
        )
        self.pid = server_process(self.client).pid
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    window=types.WindowClientCapabilities(work_done_progress=True)
                ),
                root_uri=self.root.as_uri(),
                workspace_folders=[types.WorkspaceFolder(uri=self.root.as_uri(), name="bench")],
            )
        )
        self.client.initialized(types.InitializedParams())
        self.startup = time.perf_counter() - start
        await asyncio.sleep(self.settle)  # let `initialized` finish (it opens the workspace)
        return self

    async def call(self, method: str, params: dict) -> Any:
        result = await self.client.protocol.send_request_async(method, params)
        return _plain(result)

    async def __aexit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.client.shutdown_async(None), 10)
            self.client.exit(None)
        await self.client.stop()


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


# ---- report ---------------------------------------------------------------------------------

ROWS: list[tuple[str, str, str | None]] = [
    # (sample name, label, the baseline-(a) sample it is compared with)
    (
        "floor.python_scandir_lstat",
        "floor: Python scandir + lstat of every entry",
        "capture.baseline_a.0",
    ),
    ("floor.find_printf", "floor: find -printf (C, lstat of every entry)", "capture.baseline_a.0"),
    ("capture.lsp.0", "capture over LSP (watcher), 0 changed", "capture.baseline_a.0"),
    ("capture.lsp.10", "capture over LSP (watcher), 10 changed", "capture.baseline_a.10"),
    ("capture.lsp.1000", "capture over LSP (watcher), 1000 changed", "capture.baseline_a.1000"),
    (
        "capture.lsp.10_index_rewritten",
        "capture over LSP, 10 changed, user's index rewritten",
        "capture.baseline_a.10",
    ),
    ("capture.engine.0", "capture, Engine full scan, 0 changed", "capture.engine_baseline_a.0"),
    ("capture.engine.10", "capture, Engine full scan, 10 changed", "capture.engine_baseline_a.10"),
    (
        "capture.engine_baseline_a_flushed.10",
        "(a) flushing each loose object and the ref as turnback does, 10 changed",
        "capture.engine_baseline_a.10",
    ),
    (
        "capture.engine.1000",
        "capture, Engine full scan, 1000 changed",
        "capture.engine_baseline_a.1000",
    ),
    (
        "capture.engine.0_late",
        "capture, Engine full scan, 0 changed, late in session",
        "capture.engine_baseline_a.0",
    ),
    (
        "capture.cli.10",
        "capture, CLI process (full scan), 10 changed",
        "capture.engine_baseline_a.10",
    ),
    (
        f"capture.hook_daemon.{HOOK_CHANGED}",
        f"hook: turnback capture process, warm daemon, {HOOK_CHANGED} changed",
        f"capture.hook_baseline_a.{HOOK_CHANGED}",
    ),
    (
        f"capture.hook_daemon_inside.{HOOK_CHANGED}",
        "  of which the daemon, request to answer (its log)",
        f"capture.hook_baseline_a.{HOOK_CHANGED}",
    ),
    (
        f"capture.hook_baseline_a.{HOOK_CHANGED}",
        f"baseline (a), {HOOK_CHANGED} changed, interleaved with the hook",
        None,
    ),
    (
        f"capture.hook_first.{HOOK_CHANGED}",
        f"hook: first capture, no daemon yet (starts one), {HOOK_CHANGED} changed",
        None,
    ),
    (
        f"capture.hook_cli_today.{HOOK_CHANGED}",
        f"today's CLI (TURNBACK_DAEMON=off), interleaved with it, {HOOK_CHANGED} changed",
        None,
    ),
    ("capture.baseline_a.0", "baseline (a) temp index + add -A + write/commit-tree, 0", None),
    ("capture.baseline_a.10", "baseline (a), 10 changed", None),
    ("capture.baseline_a.1000", "baseline (a), 1000 changed", None),
    ("capture.baseline_b.0", "baseline (b) git stash create, 0", "capture.baseline_a.0"),
    ("capture.baseline_b.10", "baseline (b) git stash create, 10", "capture.baseline_a.10"),
    ("capture.baseline_b.1000", "baseline (b) git stash create, 1000", "capture.baseline_a.1000"),
    (
        "capture.baseline_c_later.0",
        "baseline (c) shadow repo add+commit, later run, 0",
        "capture.baseline_a.0",
    ),
    (
        "capture.baseline_c_later.10",
        "baseline (c) shadow repo, later run, 10",
        "capture.baseline_a.10",
    ),
    (
        "capture.baseline_c_later.1000",
        "baseline (c) shadow repo, later run, 1000",
        "capture.baseline_a.1000",
    ),
    ("cold.baseline_c_first", "baseline (c) shadow repo, first run", "capture.baseline_a.0"),
    ("cold.baseline_a_first", "baseline (a) first run (no snapshot objects yet)", None),
    ("cold.lsp", "cold first capture over LSP (new server)", "cold.baseline_a_first"),
    ("cold.engine", "cold first capture in process (new Engine)", "cold.baseline_a_first"),
    ("cold.lsp_server_start", "server start + initialize (not a capture)", None),
    ("undo.lsp.10", "undo over LSP, sealed turn of 10 files", None),
    ("redo.lsp.10", "redo over LSP, 10 files", None),
    ("undo.lsp.1000", "undo over LSP, sealed turn of 1000 files", None),
    ("redo.lsp.1000", "redo over LSP, 1000 files", None),
    ("undo.engine.10", "undo in process, 10 files", None),
    ("redo.engine.10", "redo in process, 10 files", None),
    ("undo.engine.1000", "undo in process, 1000 files", None),
    ("redo.engine.1000", "redo in process, 1000 files", None),
    ("diff.lsp.50x2000", "snapshot/diff over LSP, 50 files x ~2000 lines", None),
    ("diff.engine.50x2000", "diff in process, 50 files x ~2000 lines", None),
    ("diff.lsp.11_real", "snapshot/diff over LSP, real turn: 10 C files + 1 new", None),
    ("diff.engine.11_real", "diff in process, real turn: 10 C files + 1 new", None),
    (
        f"undo.dirty_files.{UNDO_FILES}",
        f"undo in process, {UNDO_FILES} files, 1 GiB dirty: fsync written (now)",
        None,
    ),
    (
        f"undo.dirty_syncfs.{UNDO_FILES}",
        f"undo in process, {UNDO_FILES} files, 1 GiB dirty: syncfs (before)",
        None,
    ),
    (
        f"undo.dirty_files_flush.{UNDO_FILES}",
        "  of which make_durable (fsync of the files written and their directories)",
        None,
    ),
    (
        f"undo.dirty_syncfs_flush.{UNDO_FILES}",
        "  of which make_durable, the syncfs before",
        None,
    ),
    ("undo.dirty_kernel_floor", "1 GiB dirty: write+rename+fsync of one 4 KiB file (floor)", None),
    (
        f"redo.dirty_files.{UNDO_FILES}",
        f"redo in process, {UNDO_FILES} files, 1 GiB dirty: fsync written (now)",
        None,
    ),
    (
        f"redo.dirty_syncfs.{UNDO_FILES}",
        f"redo in process, {UNDO_FILES} files, 1 GiB dirty: syncfs (before)",
        None,
    ),
]


def build_summary(bench: Bench) -> dict[str, Any]:
    summ = {name: summary(s) for name, s in bench.samples.items()}
    rows = []
    for name, label, base in ROWS:
        if name not in summ:
            continue
        row = {"name": name, "label": label, **summ[name]}
        if base and base in summ:
            row["ratioToA"] = summ[name]["p50"] / summ[base]["p50"]
            row["comparedWith"] = base
        rows.append(row)
    return {"summary": summ, "rows": rows}


def targets(bench: Bench, summ: dict[str, dict[str, float]]) -> list[dict[str, Any]]:
    def p50(name: str) -> float | None:
        return summ[name]["p50"] if name in summ else None

    out = []

    def target(what: str, measured: str, ok: bool | None, why: str = "") -> None:
        out.append({"target": what, "measured": measured, "met": ok, "note": why})

    # Issue 4 set 0.5x for every front and 0.1x for the watcher; issue 12 set 0.7x for the
    # full scan (the Engine's, which the CLI and the server's fallback run).
    fronts = (
        ("lsp", "capture.baseline_a.10", "server, watcher path; issue 4", 0.5),
        ("engine", "capture.engine_baseline_a.10", "full scan: Engine; issue 12", 0.7),
        ("engine", "capture.engine_baseline_a.10", "full scan: Engine; issue 4", 0.5),
        ("cli", "capture.engine_baseline_a.10", "CLI process, full scan; issue 4", 0.5),
        ("lsp", "capture.baseline_a.10", "server, watcher knows the changed paths; issue 4", 0.1),
    )
    flushed = p50("capture.engine_baseline_a_flushed.10")
    for front, base, what, bound in fronts:
        t = p50(f"capture.{front}.10")
        a = p50(base)
        if t is not None and a:
            equal_footing = ""
            if front == "engine" and flushed:
                equal_footing = (
                    f"{t / flushed:.2f}x (a) flushing what turnback flushes "
                    f"({flushed * 1000:.0f} ms)"
                )
            target(
                f"capture p50 <= {bound}x baseline (a), 10 changed ({what})",
                f"{t * 1000:.0f} ms = {t / a:.2f}x ({a * 1000:.0f} ms)",
                t / a <= bound,
                equal_footing,
            )
    hook = p50(f"capture.hook_daemon.{HOOK_CHANGED}")
    hook_a = p50(f"capture.hook_baseline_a.{HOOK_CHANGED}")
    if hook is not None and hook_a:
        target(
            f"hook capture process p50 <= 100 ms and <= 0.25x baseline (a), {HOOK_CHANGED} "
            "changed, warm daemon",
            f"{hook * 1000:.0f} ms = {hook / hook_a:.2f}x ({hook_a * 1000:.0f} ms); served by "
            f"the daemon: {bench.notes.get('hookServedByDaemon')}",
            hook <= 0.100 and hook / hook_a <= 0.25,
        )
    first = p50(f"capture.hook_first.{HOOK_CHANGED}")
    today = p50(f"capture.hook_cli_today.{HOOK_CHANGED}")
    if first is not None and today:
        target(
            "first hook (no daemon yet) no slower than today's CLI",
            f"{first * 1000:.0f} ms vs {today * 1000:.0f} ms = {first / today:.2f}x",
            first <= today * 1.05,
            "within 5 %: both are one in-process full scan; samples are noisy",
        )
    for op in ("undo", "redo"):
        for n in RESTORED:
            t = p50(f"{op}.lsp.{n}")
            if t is not None:
                target(
                    f"{op} p50 <= 150 ms ({n} files, over LSP)",
                    f"{t * 1000:.0f} ms",
                    t <= 0.150 if n == 10 else None,
                    "" if n == 10 else "the target is stated for a small turn; shown for growth",
                )
    for op in ("undo", "redo"):
        now, before = p50(f"{op}.dirty_files.{UNDO_FILES}"), p50(f"{op}.dirty_syncfs.{UNDO_FILES}")
        if now is not None and before is not None:
            dirty = bench.notes.get("dirtyUndo", {}).get("dirtyKiBBeforeUndo", [])
            target(
                f"{op} p50 <= 150 ms ({UNDO_FILES} files) with >= 1 GiB unrelated data dirty",
                f"{now * 1000:.0f} ms (syncfs, before: {before * 1000:.0f} ms); Dirty before "
                f"each undo {min(dirty, default=0) // 1024}-{max(dirty, default=0) // 1024} MiB",
                now <= 0.150,
            )
    cold = p50("cold.lsp")
    a0 = p50("cold.baseline_a_first")
    if cold is not None and a0:
        runs = bench.notes.get("coldProgress", [])
        seen = sum(p["received"] for p in runs)
        # The server starts progress 0.3 s into a capture, after a create round trip.
        slow = sum(t > 0.4 for t in bench.samples.get("cold.lsp", []))
        target(
            "cold first capture <= 1.5x baseline (a)'s first run, with $/progress",
            f"{cold * 1000:.0f} ms = {cold / a0:.2f}x ({a0 * 1000:.0f} ms); $/progress received "
            f"in {seen} of {len(runs)} cold captures ({slow} took over 0.4 s: the server's "
            "0.3 s delay plus a round trip)",
            cold / a0 <= 1.5 and seen >= slow,
        )
        at_once = p50("cold.lsp_at_once")
        if at_once is not None:
            target(
                "cold first capture sent right after `initialized` (no target of its own)",
                f"{at_once * 1000:.0f} ms = {at_once / a0:.2f}x ({a0 * 1000:.0f} ms)",
                None,
                "the harness that starts the server for its first capture",
            )
    d = p50("diff.lsp.50x2000")
    if d is not None:
        target("diff of the 50-file turn <= 200 ms (over LSP)", f"{d * 1000:.0f} ms", d <= 0.2)
    d = p50("diff.lsp.11_real")
    if d is not None:
        target("diff of the real 11-file turn <= 100 ms (over LSP)", f"{d * 1000:.0f} ms", d <= 0.1)
    g = bench.notes.get("growth")
    if g:
        loose = g["looseGrowthBytes"] / g["editBytes"]
        packed = g["repackGrowthBytes"] / g["editBytes"]
        unexpected = len(g["objects"].get("unexpectedBlobs", []))
        target(
            "object database growth <= 2x bytes changed over 100 turns (issue 4)",
            f"loose {g['looseGrowthBytes'] / 1024:.0f} KiB = {loose:.0f}x, after git repack -d "
            f"{g['repackGrowthBytes'] / 1024:.0f} KiB = {packed:.1f}x the "
            f"{g['editBytes'] / 1024:.1f} KiB of edited lines",
            packed <= 2,
        )
        git_packed = g["gitCommitPerTurn"]["repackGrowthBytes"]
        target(
            "storage <= 1.2x what `git add -A && git commit` per turn adds (after repack -d)",
            f"turnback {g['repackGrowthBytes'] / 1024:.0f} KiB, git {git_packed / 1024:.0f} KiB "
            f"= {g['repackGrowthBytes'] / max(git_packed, 1):.2f}x",
            g["repackGrowthBytes"] <= 1.2 * git_packed,
        )
        target(
            "nothing written for unchanged files",
            f"{unexpected} blobs that are neither a changed file's content nor a timeline",
            unexpected == 0,
        )
    rss = bench.notes.get("serverRss", {}).get("VmHWM")
    if rss:
        target("server RSS <= 200 MB (issue 4)", f"VmHWM {rss / 1024:.0f} MiB", rss / 1024 <= 200)
        target(
            "server peak RSS <= 150 MiB over the session (issue 12)",
            f"VmHWM {rss / 1024:.0f} MiB",
            rss / 1024 <= 150,
        )
    return out


def print_table(result: dict[str, Any]) -> None:
    tree = f"{TREE} tree ({result['repository']})" if TREE else f"seed {SEED}"
    print(f"\nturnback benchmarks: {result['size']} tracked files, {tree}, {REPEAT} samples")
    print(f"turnback commit {result['turnback'].get('commit', '?')[:12]}")
    print(f"load average at start/end: {result['loadStart']} / {result['loadEnd']}\n")
    print(f"{'figure':<58} {'p50 ms':>9} {'p95 ms':>9} {'n':>3} {'x (a)':>7}")
    for row in result["rows"]:
        ratio = f"{row['ratioToA']:.2f}" if "ratioToA" in row else ""
        print(
            f"{row['label']:<58} {row['p50'] * 1000:>9.1f} {row['p95'] * 1000:>9.1f} "
            f"{row['n']:>3} {ratio:>7}"
        )
    notes = result["notes"]
    if "coldProgress" in notes:
        print(f"\ncold capture $/progress: {notes['coldProgress']}")
    if "serverInotifyWatches" in notes:
        print(f"inotify watches held by the server: {notes['serverInotifyWatches']}")
    if "privateIndexBeforeLate" in notes:
        print(f"turnback's private index late in the session: {notes['privateIndexBeforeLate']}")
    if "dirtyUndo" in notes:
        print(f"unrelated dirty data before the undo/redo samples: {notes['dirtyUndo']}")
    if "serverRss" in notes:
        print(f"server memory (KiB): {notes['serverRss']}")
        timeline = notes.get("serverRssTimeline", {})
        print(
            "  VmRSS along the session (MiB): "
            + ", ".join(f"{k} {v.get('VmRSS', 0) / 1024:.0f}" for k, v in timeline.items())
        )
    if "growth" in notes:
        g = notes["growth"]
        print(
            f"storage over {g['turns']} turns x 10 edits ({g['captures']} captures): edited lines "
            f"{g['editBytes']} B, changed files {g['changedFileBytes']} B; loose growth "
            f"{g['looseGrowthBytes']} B in {g['newLooseObjects']} objects; after repack -d "
            f"{g['repackGrowthBytes']} B"
            + (f"; after full gc {g['fullGcGrowthBytes']} B" if "fullGcGrowthBytes" in g else "")
        )
        gc = g["gitCommitPerTurn"]
        print(
            f"  git add -A && git commit per turn, same changes: loose {gc['looseGrowthBytes']} B, "
            f"after repack -d {gc['repackGrowthBytes']} B"
        )
        for kind, v in sorted(g["objects"].get("byKind", {}).items()):
            print(
                f"    {kind:<30} {v['count']:>6} objects {v['rawBytes']:>10} B raw "
                f"{v['looseBytes']:>10} B loose (zlib)"
            )
    print("\ntargets (stated for 100k files):")
    for t in result["targets"]:
        verdict = {True: "MET", False: "MISSED", None: "info"}[t["met"]]
        note = f" ({t['note']})" if t["note"] else ""
        print(f"  [{verdict:>6}] {t['target']}: {t['measured']}{note}")


def main() -> None:
    command = " ".join(
        [f"{k}={os.environ[k]}" for k in sorted(os.environ) if k.startswith("BENCH_")]
        + ["python", "bench/run.py", *sys.argv[1:]]
    )
    started = time.time()
    load_start = loadavg()
    product = product_version()
    bench = Bench()
    size = bench.repo_stats["trackedFiles"] if TREE else SIZE
    log(f"benchmarking {size} files, {REPEAT} samples per figure, sections {','.join(SECTIONS)}")
    if "floor" in SECTIONS:
        bench.floor()
        log("  floor: done")
    if "cold" in SECTIONS:
        asyncio.run(bench.cold())
        log("  cold: done")
    if any(s in SECTIONS for s in ("capture", "undo", "diff", "rss")):
        asyncio.run(bench.lsp_block())
    bench.engine_block()
    if "hook" in SECTIONS:
        hook_block(bench, SERVER_ENV, REPEAT)
        log("  hook captures: done")
    built = build_summary(bench)
    result = {
        "command": command,
        "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "durationSeconds": round(time.time() - started, 1),
        "size": size,
        "seed": SEED,
        "repeat": REPEAT,
        "coldRepeat": COLD_REPEAT,
        "sections": list(SECTIONS),
        "turnback": product,
        "machine": machine_info(),
        "loadStart": load_start,
        "loadEnd": loadavg(),
        "loadBySection": bench.load,
        "repository": bench.repo_stats,
        "notes": bench.notes,
        "rows": built["rows"],
        "summary": built["summary"],
        "samples": bench.samples,
    }
    result["targets"] = targets(bench, built["summary"])
    text = json.dumps(result, indent=1) + "\n"
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    if not TREE:  # results.json is the latest generated run, which report.py and plot.py read
        (RESULTS_DIR / f"{OUTPUT}.json").write_text(text)
    result_file(LABEL).write_text(text)
    print_table(result)
    shown = "bench" if RESULTS_DIR == BENCH_DIR else RESULTS_DIR
    print(
        f"\nwrote {shown}/{OUTPUT}-{LABEL}.json (and {shown}/{OUTPUT}.json unless a real tree) in "
        f"{result['durationSeconds']} s"
    )
    shutil.rmtree(DATA_DIR, ignore_errors=True)
    if os.environ.get("BENCH_KEEP") != "1":  # the scratch copies; the cache stays
        shutil.rmtree(bench.work, ignore_errors=True)
        shutil.rmtree(bench.shadow, ignore_errors=True)
        shutil.rmtree(REPOS_DIR / f"gitcommit-{LABEL}.git", ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    finally:  # the turnback data directory of this run, even when it fails
        shutil.rmtree(DATA_DIR, ignore_errors=True)
