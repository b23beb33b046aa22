"""Workspace benchmark (issue 14): a folder of ten repositories against one repository
holding as many files, with the same ten changed files.

`python bench/workspace.py [PER_REPO]` (default 10000: ten 10k-file repositories against
one 100k-file repository). Both run through the in-process Engine with the inotify watcher
on, as a long-lived server does: a warm-up full scan, then per sample ten files changed
(across three of the ten repositories), a capture (timed), an "after" capture, an undo
(timed) and a redo. Then, in the workspace, `turnback capture` processes (what a hook
runs) against its warm daemon. Prints one JSON object; `bench/README.md` has the figures.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from generate import cached_repo, git, work_copy  # noqa: E402

from turnback.daemon.paths import locate  # noqa: E402
from turnback.engine import Engine  # noqa: E402
from turnback.wire import to_wire  # noqa: E402

REPOS = 10
CHANGED = 10
SAMPLES = int(os.environ.get("BENCH_REPEAT") or 5)


def text_files(repo: Path, count: int) -> list[str]:
    """`count` tracked text files of `repo`, deterministic."""
    listed = git(repo, "ls-files", "-s").splitlines()
    files = [line.split("\t", 1)[1] for line in listed if line.startswith("100644")]
    return [f for f in sorted(files) if f.endswith((".py", ".md", ".txt", ".js"))][:count]


def measure(folder: Path, targets: list[Path]) -> dict[str, object]:
    """Warm-up, then timed captures and undos of ten-file turns."""
    engine = Engine(str(folder))
    assert engine.enable_watcher(), "needs inotify"
    started = time.perf_counter()
    engine.warm_up()
    first = time.perf_counter() - started
    captures, undos = [], []
    for sample in range(SAMPLES + 1):
        for target in targets:
            with open(target, "a") as handle:
                handle.write(f"# sample {sample}\n")
        started = time.perf_counter()
        turn = to_wire(engine.capture(label=f"sample {sample}"))
        took = time.perf_counter() - started
        for target in targets:
            with open(target, "a") as handle:
                handle.write(f"# agent {sample}\n")
        engine.capture(phase="after")
        started = time.perf_counter()
        result = to_wire(engine.undo())
        undo = time.perf_counter() - started
        assert result["turnsUndone"] == 1 and len(result["files"]) == len(targets), result
        engine.redo()
        if sample:  # the first sample warms the members' watcher paths
            captures.append(took)
            undos.append(undo)
    engine.close()
    repos = len(turn.get("repositories", []))
    return {
        "repositories": repos,
        "firstCaptureSeconds": round(first, 3),
        "captureP50Ms": round(statistics.median(captures) * 1000, 1),
        "captureMaxMs": round(max(captures) * 1000, 1),
        "undoP50Ms": round(statistics.median(undos) * 1000, 1),
        "undoMaxMs": round(max(undos) * 1000, 1),
    }


def measure_hook(folder: Path, targets: list[Path]) -> dict[str, object]:
    """`turnback capture` processes (what a hook runs) against the folder's warm daemon."""
    env = {**os.environ, "TURNBACK_DAEMON": "on"}
    location = locate(str(folder))
    assert location is not None
    log = Path(location.state_dir) / "daemon" / "log"
    daemon = subprocess.Popen(
        [sys.executable, "-m", "turnback", "daemon", "-C", str(folder)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        while f"warm (pid {daemon.pid})" not in (log.read_text() if log.exists() else ""):
            assert time.monotonic() < deadline and daemon.poll() is None, "no warm daemon"
            time.sleep(0.05)
        hooks: list[float] = []
        for sample in range(SAMPLES * 3 + 1):
            for target in targets:
                with open(target, "a") as handle:
                    handle.write(f"# hook {sample}\n")
            cmd = [sys.executable, "-m", "turnback", "capture", "-C", str(folder)]
            started = time.perf_counter()
            done = subprocess.run([*cmd, "--label", "hook"], env=env, capture_output=True)
            took = time.perf_counter() - started
            assert done.returncode == 0, done.stderr
            if sample:
                hooks.append(took)
        served = log.read_text().count("answered snapshot/capture")
    finally:
        daemon.terminate()
        daemon.wait(30)
    return {
        "hookP50Ms": round(statistics.median(hooks) * 1000, 1),
        "hookMaxMs": round(max(hooks) * 1000, 1),
        "servedByDaemon": served,
        "samples": len(hooks),
    }


def main() -> None:
    per_repo = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    scratch = Path(tempfile.mkdtemp(prefix="turnback-bench-ws-"))
    os.environ.setdefault("TURNBACK_DATA_DIR", str(scratch / "data"))
    try:
        member_src, _ = cached_repo(per_repo, log=lambda m: print(m, file=sys.stderr))
        single_src, _ = cached_repo(per_repo * REPOS, log=lambda m: print(m, file=sys.stderr))
        workspace = scratch / "workspace"
        for i in range(REPOS):
            work_copy(member_src, workspace / f"repo{i}")
        picked = text_files(workspace / "repo0", 4)
        targets = [workspace / f"repo{i % 3}" / picked[i // 3] for i in range(CHANGED)]
        single = scratch / "single"
        work_copy(single_src, single)
        single_targets = [single / p for p in text_files(single, CHANGED)]
        result = {
            "perRepository": per_repo,
            "repositories": REPOS,
            "changedFiles": CHANGED,
            "samples": SAMPLES,
            "workspace": measure(workspace, targets),
            "workspaceHook": measure_hook(workspace, targets),
            "singleRepository": measure(single, single_targets),
            "loadavg": os.getloadavg(),
        }
        ratio = result["workspace"]["captureP50Ms"] / result["singleRepository"]["captureP50Ms"]
        result["captureRatio"] = round(ratio, 2)
        print(json.dumps(result, indent=1))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
