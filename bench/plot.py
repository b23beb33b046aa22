"""Plots capture latency against repository size from bench/results-<size>.json.

    python bench/plot.py [OUT.svg]     # default: docs/bench/capture-latency.svg
    BENCH_OUTPUT=issue12n-results python bench/plot.py OUT.svg   # another set of runs

Reads every bench/<BENCH_OUTPUT>-<size>.json (one run of bench/run.py per size, with the
same BENCH_OUTPUT; default `results`), and draws,
on log-log axes, the median (p50) latency of a capture with 10 changed files for
turnback (over LSP with its watcher, and a full scan in process) and for the
baselines measured in the same runs, plus the first capture of each (turnback cold,
the shadow repository's first run) and the machine's floor (find -printf). The p95
is drawn as a thin whisker. Plain SVG, written by hand: no plotting dependency.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from resultfiles import BENCH_DIR, OUTPUT, RESULTS_DIR, result_file

DEFAULT_OUT = BENCH_DIR.parent / "docs" / "bench" / "capture-latency.svg"

SERIES = [
    # (sample name, legend, colour, SVG stroke-dasharray or "" for a solid line)
    ("capture.lsp.10", "turnback over LSP, watcher (10 changed)", "#1b7837", ""),
    ("capture.engine.10", "turnback full scan, Engine (10 changed)", "#5aae61", ""),
    (
        "capture.lsp.10_index_rewritten",
        "turnback over LSP after git rewrote the index",
        "#1b7837",
        "2 3",
    ),
    ("cold.lsp", "turnback cold first capture (new server)", "#5aae61", "6 4"),
    (
        "capture.baseline_a.10",
        "(a) temp index + add -A + write-tree (10 changed)",
        "#2166ac",
        False,
    ),
    ("capture.baseline_b.10", "(b) git stash create (10 changed)", "#762a83", ""),
    ("capture.baseline_c_later.10", "(c) shadow repo add + commit (10 changed)", "#d6604d", ""),
    ("cold.baseline_c_first", "(c) shadow repo, first run", "#d6604d", "6 4"),
    ("floor.find_printf", "floor: find -printf (lstat of every entry)", "#888888", "6 4"),
]

W, H = 900, 560
LEFT, RIGHT, TOP, BOTTOM = 80, 330, 50, 60


def load() -> list[dict]:
    runs = []
    for path in sorted(RESULTS_DIR.glob(result_file("*").name)):
        try:
            run = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not run.get("repository", {}).get("tree"):  # a real tree is not on the size axis
            runs.append(run)
    return sorted(runs, key=lambda r: r["size"])


def nice_ticks(low: float, high: float) -> list[float]:
    ticks = []
    for exp in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for m in (1, 2, 5):
            v = m * 10**exp
            if low <= v <= high:
                ticks.append(v)
    return ticks


def fmt_ms(v: float) -> str:
    return f"{v / 1000:g} s" if v >= 1000 else f"{v:g} ms"


def fmt_size(v: int) -> str:
    return f"{v // 1000}k" if v >= 1000 else str(v)


def render(runs: list[dict]) -> str:
    sizes = [r["size"] for r in runs]
    points: dict[str, list[tuple[int, float, float]]] = {}
    for run in runs:
        for name, *_ in SERIES:
            s = run.get("summary", {}).get(name)
            if s:
                points.setdefault(name, []).append((run["size"], s["p50"] * 1000, s["p95"] * 1000))
    values = [v for pts in points.values() for _, p50, p95 in pts for v in (p50, p95)]
    if not values:
        raise SystemExit(f"no {OUTPUT}-<size>.json with capture figures; run bench/run.py first")
    y_low = 10 ** math.floor(math.log10(min(values)))
    y_high = 10 ** math.ceil(math.log10(max(values)))
    x_low, x_high = min(sizes) / 1.3, max(sizes) * 1.3
    if x_low == x_high:
        x_low, x_high = x_low / 2, x_high * 2
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def x(v: float) -> float:
        return LEFT + pw * (math.log10(v) - math.log10(x_low)) / (
            math.log10(x_high) - math.log10(x_low)
        )

    def y(v: float) -> float:
        return TOP + ph * (
            1 - (math.log10(v) - math.log10(y_low)) / (math.log10(y_high) - math.log10(y_low))
        )

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="24" font-size="16" font-weight="bold">'
        "Capture latency against repository size (p50, whiskers to p95)</text>",
    ]
    for v in nice_ticks(y_low, y_high):
        yy = y(v)
        major = math.log10(v).is_integer()
        out.append(
            f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + pw}" y2="{yy:.1f}" '
            f'stroke="{"#cccccc" if major else "#eeeeee"}"/>'
        )
        out.append(f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end">{fmt_ms(v)}</text>')
    for v in sizes:
        xx = x(v)
        out.append(
            f'<line x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" y2="{TOP + ph}" stroke="#eeeeee"/>'
        )
        out.append(
            f'<text x="{xx:.1f}" y="{TOP + ph + 18}" text-anchor="middle">{fmt_size(v)}</text>'
        )
    out.append(
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#444444"/>'
    )
    out.append(
        f'<text x="{LEFT + pw / 2}" y="{H - 16}" text-anchor="middle">'
        "tracked files in the generated repository (log scale)</text>"
    )
    out.append(
        f'<text x="18" y="{TOP + ph / 2}" text-anchor="middle" '
        f'transform="rotate(-90 18 {TOP + ph / 2})">latency (log scale)</text>'
    )
    legend_y = TOP + 8
    for name, label, colour, dashed in SERIES:
        pts = points.get(name)
        if not pts:
            continue
        dash = f' stroke-dasharray="{dashed}"' if dashed else ""
        path = " ".join(
            f"{'M' if i == 0 else 'L'}{x(s):.1f},{y(p50):.1f}" for i, (s, p50, _) in enumerate(pts)
        )
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for s, p50, p95 in pts:
            out.append(
                f'<line x1="{x(s):.1f}" y1="{y(p50):.1f}" x2="{x(s):.1f}" y2="{y(p95):.1f}" '
                f'stroke="{colour}" stroke-width="1"/>'
            )
            out.append(f'<circle cx="{x(s):.1f}" cy="{y(p50):.1f}" r="3.5" fill="{colour}"/>')
        lx = LEFT + pw + 16
        out.append(
            f'<line x1="{lx}" y1="{legend_y}" x2="{lx + 26}" y2="{legend_y}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{lx + 32}" y="{legend_y + 4}">{escape(label)}</text>')
        legend_y += 20
    machine = runs[-1].get("machine", {})
    note = (
        f"{machine.get('cpus', '?')} CPUs, {machine.get('filesystem', '?')}, "
        f"{machine.get('git', '')}; load average during runs: "
        + ", ".join(f"{fmt_size(r['size'])}: {r.get('loadStart', ['?'])[0]}" for r in runs)
    )
    out.append(
        f'<text x="{LEFT + pw + 16}" y="{legend_y + 16}" font-size="10" fill="#555555">'
        f"{escape(note[:60])}</text>"
    )
    if len(note) > 60:
        out.append(
            f'<text x="{LEFT + pw + 16}" y="{legend_y + 30}" font-size="10" fill="#555555">'
            f"{escape(note[60:130])}</text>"
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT
    runs = load()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(runs))
    print(f"wrote {out} from {len(runs)} runs: sizes {[r['size'] for r in runs]}")


if __name__ == "__main__":
    main()
