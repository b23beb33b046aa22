"""What writing and flushing its objects costs a capture on linux's tree (issue 12).

    python bench/fsync_probe.py [SAMPLES]      # default 15 of each

Two parts, in process, on a scratch copy of the cached linux tree (bench/real_tree.py):

1. **Isolated writes.** 45 new objects (10 blobs of 20 KB, 35 trees: a turn of 10
   changed C files) written into the copy's object folders, alternated: by libgit2 one by
   one (an fsync of the file, then of its folder, each), as captures did until the
   twenty-sixth session, and by `looseobjects.write_loose`, as they do now. The same
   with every `objects/xx` folder removed first (a fresh clone has none).
2. **Full-scan captures.** The same 10 C files rewritten before each capture, then a
   full scan: as turnback runs (objects held, written loose side by side), the old way
   (libgit2's writes, one by one), and with no flush at all (libgit2's fsync off, and
   turnback's own); alternated, after a 0.4 s pause each.

Prints the medians and the samples in order of size. A probe: turnback never turns its
flushes off.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(BENCH_DIR.parent / "server"))
os.environ["TURNBACK_DATA_DIR"] = tempfile.mkdtemp(prefix="turnback-fsyncprobe-")

import pygit2  # noqa: E402
from generate import REPOS_DIR, work_copy  # noqa: E402
from pygit2.enums import Option  # noqa: E402
from real_tree import linux_repo  # noqa: E402

from turnback.config import Settings  # noqa: E402
from turnback.core import durability, looseobjects, objectbatch  # noqa: E402
from turnback.core.looseobjects import write_loose  # noqa: E402
from turnback.engine import Engine  # noqa: E402

SAMPLES = int(sys.argv[1]) if len(sys.argv) > 1 else 15
#: How captures write: "turnback" (now), "one by one" (libgit2's), "unflushed".
_mode = "turnback"


def _held(self, target, objects_dir, hold=True, packs=None):  # type: ignore[no-untyped-def]
    _batch_init(self, target, objects_dir, hold=hold and _mode != "one by one", packs=packs)


def _flush(fd: int) -> None:
    if _mode != "unflushed":
        _real_flush(fd)


_batch_init = objectbatch.ObjectBatch.__init__
_real_flush = durability.flush_fd
objectbatch.ObjectBatch.__init__ = _held  # type: ignore[method-assign]
durability.flush_fd = _flush
looseobjects.flush_fd = _flush  # write_loose calls it through its module's globals


def _objects(tag: str) -> list[tuple[bytes, int, bytes]]:
    out = []
    for i in range(45):
        data = (f"{tag} {i} ".encode() * 2000)[:20000]
        kind = 3
        if i >= 10:
            kind, data = 2, b"100644 f.c\0" + hashlib.sha1(data).digest()
        header = (b"blob" if kind == 3 else b"tree") + b" %d\0" % len(data)
        out.append((hashlib.sha1(header + data).digest(), kind, data))
    return out


def isolated(work: Path, without_folders: bool) -> dict[str, list[float]]:
    repo = pygit2.Repository(str(work))
    objects_dir = work / ".git" / "objects"
    took: dict[str, list[float]] = {"libgit2, one by one": [], "write_loose": []}
    for sample in range(SAMPLES):
        for name, samples in took.items():
            objects = _objects(f"{time.time()} {name} {sample}")
            if without_folders:
                for folder in objects_dir.glob("[0-9a-f][0-9a-f]"):
                    shutil.rmtree(folder)
            time.sleep(0.3)
            start = time.perf_counter()
            if name == "write_loose":
                write_loose(objects_dir, objects)
            else:
                for _raw, kind, data in objects:
                    repo.odb.write(kind, data)
            samples.append((time.perf_counter() - start) * 1000)
    return took


def captures(work: Path) -> dict[str, list[float]]:
    global _mode
    files = sorted(str(p.relative_to(work)) for p in (work / "drivers").glob("**/*.c"))
    random.Random(1).shuffle(files)
    changed = files[:10]
    original = {rel: (work / rel).read_bytes() for rel in changed}
    engine = Engine(str(work), Settings())
    engine.capture(label="warm-up")
    took: dict[str, list[float]] = {"turnback": [], "one by one": [], "unflushed": []}
    for sample in range(SAMPLES):
        for mode, samples in took.items():
            _mode = mode
            pygit2.option(Option.ENABLE_FSYNC_GITDIR, mode != "unflushed")
            for rel in changed:
                (work / rel).write_bytes(original[rel] + f"# probe {sample} {mode}\n".encode())
            time.sleep(0.4)
            start = time.perf_counter()
            engine.capture(label="probe")
            samples.append((time.perf_counter() - start) * 1000)
    _mode = "turnback"
    pygit2.option(Option.ENABLE_FSYNC_GITDIR, True)
    engine.close()
    return took


def show(title: str, took: dict[str, list[float]]) -> None:
    print(f"{title} (load {os.getloadavg()[0]:.2f}):")
    for name, samples in took.items():
        ordered = sorted(round(s, 1) for s in samples)
        print(f"  {name}: median {statistics.median(samples):.1f} ms, sorted {ordered}")


def main() -> None:
    source, _stats = linux_repo()
    work = REPOS_DIR / "fsync-probe"
    work_copy(source, work)
    show("45 objects written", isolated(work, without_folders=False))
    show("45 objects written, no object folder there", isolated(work, without_folders=True))
    show("full-scan capture, 10 changed", captures(work))


if __name__ == "__main__":
    main()
