"""Hook captures as a harness runs them: a whole `turnback capture` process.

Two figures, each interleaved sample by sample with what it is compared with:
- warm daemon: the work tree's daemon is running and warm, so the process is
  the light client plus the daemon's watcher-path capture; against baseline (a);
- first hook: no daemon runs, so the process captures in process and starts one;
  against today's CLI (`TURNBACK_DAEMON=off`: the in-process capture alone).
Every warm-daemon sample is checked in the daemon's log to have been served by it,
and the log's "answered in" time gives the daemon's share of the process's time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HOOK_CHANGED = 10


def _daemon_dir(work: Path) -> Path:
    return work / ".git" / "turnback" / "daemon"


def _daemon_pid(work: Path) -> int | None:
    try:
        pid = int((_daemon_dir(work) / "lock").read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return None
    return pid


def _log(work: Path) -> str:
    path = _daemon_dir(work) / "log"
    return path.read_text() if path.exists() else ""


def _wait_warm(work: Path, timeout: float = 600.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        pid = _daemon_pid(work)
        if pid is not None and f"warm (pid {pid})" in _log(work):
            return pid
        if time.monotonic() > deadline:
            raise RuntimeError("the daemon did not warm up")
        time.sleep(0.05)


def _stop(work: Path) -> None:
    pid = _daemon_pid(work)
    if pid is None:
        return
    os.kill(pid, signal.SIGTERM)
    while _daemon_pid(work) == pid:
        time.sleep(0.02)


def _hook(bench: Any, env: dict[str, str]) -> tuple[float, int]:
    """One `turnback capture` process, timed from spawn to exit; (seconds, its pid)."""
    cmd = [sys.executable, "-m", "turnback", "capture", "-C", str(bench.work), "--label", "hook"]
    start = time.perf_counter()
    process = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL)
    if process.wait() != 0:
        raise RuntimeError("turnback capture failed")
    return time.perf_counter() - start, process.pid


def hook_block(bench: Any, server_env: dict[str, str], repeat: int) -> None:
    on = {**server_env, "TURNBACK_DAEMON": "on"}
    off = {**server_env, "TURNBACK_DAEMON": "off"}
    paths = bench.changed_pool[:HOOK_CHANGED]
    bench.reset_turnback()
    bench.mark_load("hook.first")
    for measured in [False] + [True] * repeat:
        _stop(bench.work)
        bench.mutate(paths)
        took, _ = _hook(bench, on)  # captures in process, then starts the daemon
        _wait_warm(bench.work)
        _stop(bench.work)
        bench.mutate(paths)
        took_cli, _ = _hook(bench, off)
        if measured:
            bench.add(f"capture.hook_first.{HOOK_CHANGED}", took)
            bench.add(f"capture.hook_cli_today.{HOOK_CHANGED}", took_cli)
    bench.mark_load("hook.warm")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "turnback", "daemon", "-C", str(bench.work)],
        env=on,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _wait_warm(bench.work)
    served = 0
    for measured in [False] + [True] * max(repeat, 15):
        bench.mutate(paths)
        took, pid = _hook(bench, on)
        log = _log(bench.work)
        served += f"snapshot/capture from pid {pid}\n" in log
        inside = float(log.rsplit("answered snapshot/capture in ", 1)[1].split(" ms", 1)[0])
        bench.mutate(paths)
        took_a = bench.baseline_a()
        if measured:
            bench.add(f"capture.hook_daemon.{HOOK_CHANGED}", took)
            bench.add(f"capture.hook_daemon_inside.{HOOK_CHANGED}", inside / 1000)
            bench.add(f"capture.hook_baseline_a.{HOOK_CHANGED}", took_a)
    bench.notes["hookServedByDaemon"] = f"{served} of {max(repeat, 15) + 1}"
    daemon.terminate()  # our child: wait for it, or its pid lingers as a zombie
    daemon.wait()
    bench.restore()
