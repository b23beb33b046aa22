"""Where run.py writes its result files, and where plot.py and report.py read them.

`BENCH_OUTPUT_DIR` moves the folder (the smoke test); `BENCH_OUTPUT` names a set of runs,
so that a session's runs keep files of their own beside the canonical `results-*`.
"""

from __future__ import annotations

import os
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = Path(os.environ.get("BENCH_OUTPUT_DIR") or BENCH_DIR)
#: The result files' prefix: `<OUTPUT>.json` (the latest run) and `<OUTPUT>-<size>.json`.
OUTPUT = os.environ.get("BENCH_OUTPUT", "results")


def result_file(label: int | str) -> Path:
    """The result file of one size (or real tree) in the set of runs `OUTPUT` names."""
    return RESULTS_DIR / f"{OUTPUT}-{label}.json"
