"""Markdown tables from bench/results-<size>.json, for bench/README.md.

    python bench/report.py 10000 100000               # every figure, two sizes
    python bench/report.py --capture 1000 10000 ...   # capture p50 across sizes

BENCH_OUTPUT reads another set of runs (`bench/<BENCH_OUTPUT>-<size>.json`, as run.py
wrote them with the same BENCH_OUTPUT; default `results`).

One table: a row per figure, for each size its p50, p95 (milliseconds) and the ratio
of its p50 to baseline (a)'s p50 measured in the same run; then the targets of each
run as run.py judged them.
"""

from __future__ import annotations

import json
import sys

from resultfiles import result_file


def fmt(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.1f}"


def size_name(size: int | str) -> str:
    if isinstance(size, str):
        return size  # a real tree: results-linux.json
    return f"{size // 1000}k" if size >= 1000 else str(size)


def run_name(run: dict) -> str:
    return run.get("repository", {}).get("tree") or size_name(run["size"])


CAPTURE_ROWS = [
    ("capture.lsp.10", "turnback over LSP, watcher"),
    ("capture.lsp.10_index_rewritten", "turnback over LSP, index rewritten (fallback)"),
    ("capture.engine.10", "turnback full scan (Engine)"),
    ("capture.baseline_a.10", "(a) temp index + add -A + write-tree"),
    ("capture.baseline_b.10", "(b) git stash create"),
    ("capture.baseline_c_later.10", "(c) shadow repo, later run"),
    ("cold.lsp", "turnback cold first capture (LSP, 0 changed)"),
    ("cold.lsp_at_once", "turnback cold first capture, sent right after `initialized`"),
    ("cold.baseline_c_first", "(c) shadow repo, first run"),
    ("floor.find_printf", "floor: find -printf"),
]


def capture_table(sizes: list[int]) -> None:
    """p50 of the capture figures with 10 changed files, one column per size."""
    runs = [json.loads(result_file(s).read_text()) for s in sizes]
    print("| capture, 10 changed, p50 ms | " + " | ".join(size_name(s) for s in sizes) + " |")
    print("|---|" + "---:|" * len(sizes))
    for name, label in CAPTURE_ROWS:
        cells = [fmt(r["summary"][name]["p50"]) if name in r["summary"] else "" for r in runs]
        print(f"| {label} | " + " | ".join(cells) + " |")
    for run in runs:
        print(
            f"\n{size_name(run['size'])}: {run['command']}, load {run['loadStart'][0]} → "
            f"{run['loadEnd'][0]}, {run['durationSeconds']} s, "
            f"turnback {run.get('turnback', {}).get('commit', '?')[:7]}"
        )


def main() -> None:
    if sys.argv[1:2] == ["--capture"]:
        capture_table([int(a) for a in sys.argv[2:]] or [1000, 10000, 30000, 100000, 300000])
        return
    sizes: list[int | str] = [int(a) if a.isdigit() else a for a in sys.argv[1:]]
    sizes = sizes or [10000, 100000]
    runs = [json.loads(result_file(s).read_text()) for s in sizes]
    labels: dict[str, str] = {}
    for run in runs:
        for row in run["rows"]:
            labels.setdefault(row["name"], row["label"])
    head = "| figure | " + " | ".join(f"{run_name(r)} p50 ms | p95 ms | × (a)" for r in runs)
    print(head + " |")
    print("|---|" + "---:|---:|---:|" * len(runs))
    for name, label in labels.items():
        cells = []
        for run in runs:
            row = next((r for r in run["rows"] if r["name"] == name), None)
            if row is None:
                cells += ["", "", ""]
                continue
            ratio = f"{row['ratioToA']:.2f}" if "ratioToA" in row else ""
            n = f" ({row['n']})" if row["n"] < run["repeat"] else ""
            cells += [fmt(row["p50"]) + n, fmt(row["p95"]), ratio]
        print(f"| {label} | " + " | ".join(cells) + " |")
    for run in runs:
        print(
            f"\n{run_name(run)}: {run['command']}; {run['repeat']} samples "
            f"(fewer where shown in brackets); load average {run['loadStart']} at the start, "
            f"{run['loadEnd']} at the end; {run['durationSeconds']} s; turnback "
            f"{run.get('turnback', {}).get('commit', '?')[:7]}."
        )
        for t in run["targets"]:
            verdict = {True: "met", False: "MISSED", None: "info"}[t["met"]]
            print(f"- {verdict}: {t['target']}: {t['measured']}")


if __name__ == "__main__":
    main()
