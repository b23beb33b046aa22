"""Deterministic repository generator for the turnback benchmarks.

`python bench/generate.py SIZE [--seed S]` makes (or reuses) a git repository of
about SIZE tracked files and prints its path. The same SIZE and seed always give
the same files, the same bytes and the same commit.

What a repository holds (counts scale with SIZE):

- tracked files in nested directories (three or four levels, 20-100 files per
  leaf directory, a few files at every level), about 90 % text (source-like
  lines, lognormal sizes around 2 KB), 5 % binary (random bytes, 1-32 KB), a few
  executables and symlinks, and 60 text files of about 2,000 lines under
  `src/big/` (the diff benchmark edits 50 of them);
- untracked files that a snapshot must capture: about 0.5 % of SIZE scattered
  next to tracked files, plus an untracked `scratch/` directory of 50 files;
- ignored files that a snapshot must leave out: `build/` (2 % of SIZE),
  `node_modules/` (3 % of SIZE), and `*.log` files scattered in tracked
  directories;
- one commit on `main`, packed by `git gc` (as a clone would be), and a user
  index refreshed after a pause, so no entry is racily clean.

Generated repositories are cached under `bench/.repos/` (gitignored; `BENCH_REPOS_DIR`) by
generator version, size and seed: `src-g<V>-n<SIZE>-s<SEED>/`, with a JSON
stamp next to it written last, so an interrupted generation is redone. The
benchmark never runs in the cached copy: `work_copy()` copies it (`cp -a`)
to a scratch directory first.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

GENERATOR_VERSION = 2
BENCH_DIR = Path(__file__).resolve().parent
#: The cache of generated repositories, and where a run puts its scratch copies;
#: `BENCH_REPOS_DIR` moves it (the smoke test keeps bench/ untouched with it).
REPOS_DIR = Path(os.environ.get("BENCH_REPOS_DIR") or BENCH_DIR / ".repos").absolute()

#: The git CLI as the benchmark runs it: no system or global configuration (the machine's
#: fsmonitor, hooks or gc settings must not change the figures), identity from the env.
GIT_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}

BIG_FILES = 60
BIG_LINES = 2000
TEXT_EXTS = (".py", ".js", ".ts", ".md", ".txt", ".json", ".c", ".h", ".go", ".rs")
BIN_EXTS = (".png", ".bin", ".jpg", ".woff2")
WORDS = (  # noqa: SIM905 - one readable string
    "alpha beta gamma delta value index count result buffer stream parse token node tree "
    "user request session window cache entry table record field option config handler "
    "error return self item list map key data path file line range start end state"
).split()


def git(cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    """The git CLI in `cwd` with no automatic gc; its output, or an error naming the command."""
    done = subprocess.run(
        ["git", "-c", "gc.auto=0", *args],
        cwd=cwd,
        env=env or GIT_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def vocabulary(rng: random.Random, n: int = 4000) -> list[str]:
    """Source-like lines to build text files from (fast, and they compress like code)."""
    lines = []
    for _ in range(n):
        indent = "    " * rng.choice((0, 0, 1, 1, 1, 2, 2, 3))
        words = rng.choices(WORDS, k=rng.randint(2, 9))
        shape = rng.random()
        if shape < 0.15:
            line = f"def {words[0]}_{words[1]}({', '.join(words[2:5])}):"
        elif shape < 0.3:
            line = f"{words[0]} = {words[1]}({', '.join(words[2:])})"
        elif shape < 0.4:
            line = "# " + " ".join(words)
        elif shape < 0.45:
            line = ""
        else:
            line = f"{words[0]}.{words[1]} = " + " + ".join(words[2:]) + f" * {rng.randint(0, 999)}"
        lines.append(indent + line if line else "")
    return lines


def text_content(rng: random.Random, vocab: list[str], rel: str, lines: int) -> bytes:
    body = rng.choices(vocab, k=lines)
    header = f"# {rel} {rng.getrandbits(64):016x}"
    return ("\n".join([header, *body]) + "\n").encode()


def layout(rng: random.Random, size: int) -> list[str]:
    """Directory paths (leaf directories first-class), deterministic for (size, seed)."""
    leaves = max(1, round(size / 60))
    depth = max(1, math.ceil(math.log(leaves, 12))) if leaves > 1 else 1
    fanout = max(2, math.ceil(leaves ** (1 / depth)))
    names = ("core", "api", "lib", "util", "model", "view", "net", "db", "io", "ui", "cli", "x")
    dirs: list[str] = []

    def grow(prefix: str, level: int) -> None:
        if len(dirs) >= leaves:
            return
        if level == depth:
            dirs.append(prefix)
            return
        for i in range(fanout):
            grow(f"{prefix}/{rng.choice(names)}{i:02d}" if prefix else f"pkg{i:02d}", level + 1)

    grow("", 0)
    return dirs


def generate(size: int, seed: int, dest: Path) -> dict:
    """Writes the repository into `dest` (which must not exist) and returns its stats."""
    rng = random.Random(seed * 1_000_003 + size)
    vocab = vocabulary(rng)
    dest.mkdir(parents=True)
    stats = {"tracked": 0, "trackedBytes": 0, "untracked": 0, "ignored": 0, "binary": 0}

    def put(rel: str, data: bytes, kind: str, mode: int | None = None) -> None:
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if mode is not None:
            os.chmod(path, mode)
        stats[kind] += 1
        if kind == "tracked":
            stats["trackedBytes"] += len(data)

    put(
        ".gitignore",
        b"*.log\n*.o\nbuild/\nnode_modules/\n.cache/\n__pycache__/\n",
        "tracked",
    )
    put("README.md", b"# generated benchmark repository\n", "tracked")
    for i in range(BIG_FILES):
        rel = f"src/big/module_{i:02d}.py"
        put(rel, text_content(rng, vocab, rel, BIG_LINES + rng.randint(-100, 100)), "tracked")

    dirs = layout(rng, size)
    remaining = size - stats["tracked"]
    # Split the remaining files over the leaf directories, 20-100 per leaf, then top up.
    weights = [rng.randint(20, 100) for _ in dirs]
    total_w = sum(weights)
    counts = [max(1, w * remaining // total_w) for w in weights]
    counts[-1] += remaining - sum(counts)
    parents = sorted({d.rpartition("/")[0] for d in dirs if "/" in d})
    tracked_paths: list[str] = []
    for leaf, count in zip(dirs, counts, strict=True):
        for j in range(count):
            roll = rng.random()
            if roll < 0.05:
                rel = f"{leaf}/asset_{j:03d}{rng.choice(BIN_EXTS)}"
                data = rng.randbytes(int(1024 * 2 ** rng.uniform(0, 5)))
                stats["binary"] += 1
                put(rel, data, "tracked")
            else:
                rel = f"{leaf}/file_{j:03d}{rng.choice(TEXT_EXTS)}"
                lines = max(3, int(rng.lognormvariate(math.log(45), 0.8)))
                mode = 0o755 if roll > 0.995 else None
                put(rel, text_content(rng, vocab, rel, min(lines, 3000)), "tracked", mode)
            tracked_paths.append(rel)
    for parent in parents[: max(1, len(parents))]:
        put(f"{parent}/README.md", f"# {parent}\n".encode(), "tracked")
    # A few symlinks (relative, inside the tree).
    for i in range(max(1, size // 20000)):
        target = tracked_paths[rng.randrange(len(tracked_paths))]
        link = f"links/link_{i:02d}"
        (dest / "links").mkdir(exist_ok=True)
        os.symlink(os.path.relpath(dest / target, dest / "links"), dest / link)
        stats["tracked"] += 1

    # Commit the tracked files (the pause keeps the index from being racily clean).
    git(dest, "init", "-q", "-b", "main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", f"generated: {size} files, seed {seed}")

    # Untracked files a snapshot must capture.
    for i in range(max(1, size // 200)):
        leaf = dirs[rng.randrange(len(dirs))]
        rel = f"{leaf}/untracked_{i:05d}.txt"
        put(rel, text_content(rng, vocab, rel, rng.randint(5, 80)), "untracked")
    for i in range(50):
        rel = f"scratch/notes_{i:02d}.md"
        put(rel, text_content(rng, vocab, rel, rng.randint(5, 80)), "untracked")
    # Ignored files a snapshot must leave out.
    for i in range(max(1, size // 50)):
        put(
            f"build/obj/{i % 37:02d}/unit_{i:05d}.o",
            rng.randbytes(rng.randint(256, 4096)),
            "ignored",
        )
    for i in range(max(1, size * 3 // 100)):
        pkg = f"node_modules/pkg{i % 97:02d}/lib/sub{i % 7}"
        put(f"{pkg}/index_{i:05d}.js", text_content(rng, vocab, pkg, rng.randint(5, 60)), "ignored")
    for i in range(max(1, size // 1000)):
        leaf = dirs[rng.randrange(len(dirs))]
        put(f"{leaf}/debug_{i:03d}.log", b"log line\n" * rng.randint(1, 200), "ignored")

    git(dest, "gc", "-q")
    time.sleep(1.2)
    git(dest, "update-index", "-q", "--really-refresh")
    stats["directories"] = len(dirs) + len(parents)
    stats["head"] = git(dest, "rev-parse", "HEAD").strip()
    return stats


def cached_repo(size: int, seed: int = 1, log=print) -> tuple[Path, dict]:  # noqa: ANN001
    """The cached pristine repository for (size, seed), generated on first use."""
    name = f"src-g{GENERATOR_VERSION}-n{size}-s{seed}"
    dest = REPOS_DIR / name
    stamp = REPOS_DIR / f"{name}.json"
    if stamp.exists() and dest.is_dir():
        return dest, json.loads(stamp.read_text())
    if dest.exists():
        shutil.rmtree(dest)
    REPOS_DIR.mkdir(parents=True, exist_ok=True)
    log(f"generating {size}-file repository (seed {seed}) in {dest} ...")
    start = time.perf_counter()
    stats = generate(size, seed, dest)
    stats["generateSeconds"] = round(time.perf_counter() - start, 1)
    stats.update(size=size, seed=seed, generator=GENERATOR_VERSION)
    stamp.write_text(json.dumps(stats, indent=1) + "\n")
    log(f"  generated in {stats['generateSeconds']} s: {stats}")
    return dest, stats


def work_copy(src: Path, dest: Path) -> None:
    """A scratch copy of a cached repository, with a refreshed (not racily clean) index.

    `cp -a` keeps mtimes but not ctimes, so the index is refreshed once, after a pause,
    the way a user's `git status` would leave it.
    """
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--reflink=auto", str(src), str(dest)], check=True)
    time.sleep(1.2)
    git(dest, "update-index", "-q", "--really-refresh")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    path, stats = cached_repo(args.size, args.seed, log=lambda m: print(m, file=sys.stderr))
    print(path)
    print(json.dumps(stats), file=sys.stderr)


if __name__ == "__main__":
    main()
