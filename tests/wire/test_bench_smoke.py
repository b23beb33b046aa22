"""bench/'s scripts run end to end at a tiny size, so an engine change that breaks them fails here.

They are not run by the rest of `make test`, and twice they broke silently when an engine
result became a typed dataclass or a helper's signature changed. Each script runs as a real
process with this Python, in a temporary directory, with the repository cache
(`BENCH_REPOS_DIR`) and the result files (`BENCH_OUTPUT_DIR`) moved out of bench/. Only that
they run and write what they should is checked, never a timing (benchmarks prove speed).
Left out: `BENCH_TREE=linux` (needs a Debian package; bench/real_tree.py is only imported).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import SERVER_ENV
from turnback.daemon import client

BENCH = Path(__file__).resolve().parents[2] / "bench"
#: Tracked files of the generated repository run.py and the profilers use.
SIZE = 300
#: workspace.py: ten 100-file repositories against one of 1,000 (the generator needs ~70).
PER_REPO = 100
#: Seconds any one script may take before it counts as hung (they take 1-20 s here).
TIMEOUT = 300

# The hook and workspace figures need the daemon and inotify, which the portable run turns
# off; the benchmarks measure the Linux paths, so that run would only double the cost.
pytestmark = pytest.mark.skipif(
    not client.available(), reason="no daemon on this platform (or TURNBACK_PORTABLE=1)"
)

#: A figure (or a note) each section of run.py writes into its result file.
SECTION_WRITES = {
    "floor": "floor.find_printf",
    "cold": "cold.lsp_at_once",
    "capture": "capture.lsp.10",
    "undo": "undo.lsp.10",
    "diff": "diff.lsp.50x2000",
    "rss": "serverRss",
    "growth": "growth",
    "cli": "capture.cli.10",
    "hook": "capture.hook_daemon.10",
    "dirtyundo": "undo.dirty_files.10",
}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the module: the shared repository cache and each script's own folder."""
    return tmp_path_factory.mktemp("bench-smoke")


def bench_env(scratch: Path, name: str) -> dict[str, str]:
    """A script's environment: a tiny size, its own folder for everything it writes."""
    own = scratch / name
    own.mkdir()
    inherited = {k: v for k, v in SERVER_ENV.items() if not k.startswith(("BENCH_", "RSS_"))}
    return {
        **inherited,
        "HOME": str(own),
        "TMPDIR": str(own),  # the scripts' mkdtemp data directories land here too
        "TURNBACK_DATA_DIR": str(own / "data"),
        "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ in bench/
        "BENCH_REPOS_DIR": str(scratch / "repos"),
        "BENCH_OUTPUT_DIR": str(own / "results"),
        "BENCH_SIZE": str(SIZE),
        "BENCH_REPEAT": "1",
        "BENCH_COLD_REPEAT": "1",
        "BENCH_DIFF_REPEAT": "1",
        "BENCH_GROWTH_TURNS": "2",
        "BENCH_DIRTY_MIB": "1",
    }


def run_script(env: dict[str, str], script: str, *args: str) -> str:
    """Runs bench/<script> to its end and returns its stdout; fails with its stderr."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=env["HOME"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    if done.returncode != 0:
        pytest.fail(f"{' '.join(['bench/' + script, *args])} failed:\n{done.stderr[-4000:]}")
    return done.stdout


def last_json(stdout: str) -> dict:
    """The indented JSON object a script prints last (after any one-line progress records)."""
    lines = stdout.splitlines()
    start = max(i for i, line in enumerate(lines) if line == "{")
    return json.loads("\n".join(lines[start:]))


@pytest.fixture(scope="module", autouse=True)
def workspace_run(scratch: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """bench/workspace.py, started before the other scripts and checked last: most of its
    time is the 1.2 s pause after each of its eleven work copies, so it runs alongside."""
    env = bench_env(scratch, "workspace")
    out = Path(env["HOME"])
    with open(out / "stdout", "w") as stdout, open(out / "stderr", "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(BENCH / "workspace.py"), str(PER_REPO)],
            cwd=out,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    yield process, out
    if process.poll() is None:  # a test failed or was deselected before waiting for it
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)


@pytest.fixture(scope="module")
def run_results(scratch: Path) -> Path:
    """bench/run.py with every offline section; the folder of its result files."""
    env = bench_env(scratch, "run")
    stdout = run_script(env, "run.py")
    assert "targets (stated for 100k files):" in stdout
    return Path(env["BENCH_OUTPUT_DIR"])


def test_run_writes_every_section(run_results: Path) -> None:
    """run.py completes every section and writes both result files with their figures."""
    latest = json.loads((run_results / "results.json").read_text())
    result = json.loads((run_results / f"results-{SIZE}.json").read_text())
    assert latest == result
    assert set(result["sections"]) == set(SECTION_WRITES), "a new section: name what it writes"
    for section, written in SECTION_WRITES.items():
        assert written in result["summary"] or written in result["notes"], section
    assert all(figure["n"] >= 1 for figure in result["summary"].values())
    assert result["rows"] and result["targets"] and result["repository"]["tracked"] > SIZE
    assert "hookServedByDaemon" in result["notes"]
    # Baseline (a) flushing what turnback flushes runs in the full-scan loop, and the
    # full-scan target states the ratio against it.
    assert "capture.engine_baseline_a_flushed.10" in result["summary"]
    full_scan = next(t for t in result["targets"] if "full scan: Engine" in t["target"])
    assert "(a) flushing what turnback flushes" in full_scan["note"]
    assert result["summary"]["diff.lsp.50x2000"]["n"] == 1  # BENCH_DIFF_REPEAT, not 9


def test_plot_draws_from_the_results(run_results: Path, scratch: Path) -> None:
    """plot.py reads run.py's result files from BENCH_OUTPUT_DIR and writes the SVG asked for."""
    env = bench_env(scratch, "plot")
    env["BENCH_OUTPUT_DIR"] = str(run_results)
    svg = Path(env["HOME"]) / "capture-latency.svg"
    stdout = run_script(env, "plot.py", str(svg))
    assert f"sizes [{SIZE}]" in stdout
    assert svg.read_text().startswith("<svg") and "turnback over LSP, watcher" in svg.read_text()


def test_report_prints_the_tables(run_results: Path, scratch: Path) -> None:
    """report.py turns run.py's result file into the README's tables, both kinds."""
    env = bench_env(scratch, "report")
    env["BENCH_OUTPUT_DIR"] = str(run_results)
    figures = run_script(env, "report.py", str(SIZE))
    assert "| capture over LSP (watcher), 10 changed |" in figures
    assert "- met: nothing written for unchanged files" in figures
    capture = run_script(env, "report.py", "--capture", str(SIZE))
    assert "| turnback over LSP, watcher |" in capture


def test_plot_and_report_read_another_set_of_runs(run_results: Path, scratch: Path) -> None:
    """With BENCH_OUTPUT, plot.py and report.py read the runs run.py wrote under that name."""
    env = bench_env(scratch, "other_runs")
    other = Path(env["BENCH_OUTPUT_DIR"])
    other.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(run_results / f"results-{SIZE}.json", other / f"issue-results-{SIZE}.json")
    env["BENCH_OUTPUT"] = "issue-results"
    svg = Path(env["HOME"]) / "other.svg"
    assert f"sizes [{SIZE}]" in run_script(env, "plot.py", str(svg))
    assert svg.read_text().startswith("<svg")
    capture = run_script(env, "report.py", "--capture", str(SIZE))
    assert "| turnback over LSP, watcher |" in capture


def test_generate_prints_the_cached_repository(scratch: Path) -> None:
    """generate.py makes (or reuses) the repository under BENCH_REPOS_DIR and prints its path."""
    env = bench_env(scratch, "generate")
    path = Path(run_script(env, "generate.py", str(SIZE)).strip())
    assert path.parent == scratch / "repos" and (path / ".git").is_dir()


def test_timeline_bytes_measures_each_turn_asked(scratch: Path) -> None:
    """timeline_bytes.py measures the objects of the turns it was asked for."""
    stdout = run_script(bench_env(scratch, "timeline"), "timeline_bytes.py", "3", "1", "3")
    result = last_json(stdout)
    assert set(result) == {"1", "3", "seconds"}
    assert all(result[t]["sealed"] and result[t]["metadata_objects"] > 0 for t in ("1", "3"))
    assert all(result[t]["snapshot_disk_bytes"] > 0 for t in ("1", "3"))  # the turn's edit


def test_profile_ops_profiles_every_operation(scratch: Path) -> None:
    """profile_ops.py gets through all its profiled operations, to the last."""
    stdout = run_script(bench_env(scratch, "profile_ops"), "profile_ops.py", str(SIZE))
    assert stdout.count("\n=== ") == 6 and "=== redo of that turn" in stdout
    assert "libgit2 fsync off" in stdout


def test_diff_fork_probe_compares_and_measures_the_child(scratch: Path) -> None:
    """diff_fork_probe.py times both ways and reads the child's memory before it exits."""
    stdout = run_script(bench_env(scratch, "forkprobe"), "diff_fork_probe.py", str(SIZE))
    assert "child, just before it exits (KiB): {'Rss'" in stdout and "Private_Dirty" in stdout
    assert "forked / one process, sample by sample: p50" in stdout


def test_profile_rss_reports_every_step(scratch: Path) -> None:
    """profile_rss.py gets through the server session's operations, to the last step."""
    stdout = run_script(bench_env(scratch, "profile_rss"), "profile_rss.py", str(SIZE))
    assert "3 diffs of 50 files" in stdout and "300 more watcher turns" in stdout


def test_workspace_measures_both_layouts(workspace_run: tuple[subprocess.Popen, Path]) -> None:
    """workspace.py (started first) measures the workspace, its hook and the single repository."""
    process, out = workspace_run
    returncode = process.wait(TIMEOUT)
    assert returncode == 0, (out / "stderr").read_text()[-4000:]
    result = json.loads((out / "stdout").read_text())
    assert result["workspace"]["repositories"] == 10
    assert result["workspaceHook"]["samples"] > 0 and result["workspaceHook"]["servedByDaemon"] > 0
    assert result["singleRepository"]["repositories"] == 0 and "captureRatio" in result


def test_scan_floor_times_every_kind(scratch: Path) -> None:
    """scan_floor.py times each kind on a generated tree and prints what is left to turnback."""
    stdout = run_script(bench_env(scratch, "scan_floor"), "scan_floor.py", "1", str(SIZE))
    assert stdout.count(": median ") == 8
    assert "libgit2's walk alone, as a full scan runs it: median" in stdout
    assert "left for the rest of a capture:" in stdout
