"""Baseline (a), the hidden-ref snapshot method agent tools use: a temporary index seeded
from the user's, `git add -A`, `write-tree`, `commit-tree`, a ref. One copy, for run.py
and the probes that compare against it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from generate import GIT_ENV as _GENERATOR_GIT_ENV
from generate import git as generated_git

#: The git CLI of the baselines: the generator's environment without its fixed dates, so
#: that every baseline commit is a new object, as every turnback snapshot is.
GIT_ENV = {k: v for k, v in _GENERATOR_GIT_ENV.items() if not k.endswith("_DATE")}
#: git options that flush what turnback flushes on a capture: each loose object and the ref.
FLUSHED_GIT = ("-c", "core.fsync=loose-object,reference", "-c", "core.fsyncMethod=fsync")


def temp_index_snapshot(work: Path, flushed: bool = False) -> float:
    """Seconds baseline (a) takes to snapshot `work`. git's default `core.fsync` flushes no
    loose object and no ref, where turnback flushes each (a snapshot must survive a power
    loss); `flushed` makes git flush them too."""
    tmp_index = work / ".git" / "bench-tmp-index"
    env = {**GIT_ENV, "GIT_INDEX_FILE": str(tmp_index)}
    flush = FLUSHED_GIT if flushed else ()
    start = time.perf_counter()
    shutil.copyfile(work / ".git" / "index", tmp_index)
    generated_git(work, *flush, "add", "-A", env=env)
    tree = generated_git(work, *flush, "write-tree", env=env).strip()
    commit = generated_git(
        work, *flush, "commit-tree", tree, "-p", "HEAD", "-m", "snapshot", env=env
    )
    generated_git(work, *flush, "update-ref", "refs/bench/snapshot", commit.strip(), env=env)
    elapsed = time.perf_counter() - start
    tmp_index.unlink()
    return elapsed
