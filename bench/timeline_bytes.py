"""Bytes one turn adds to the object database, split into snapshot and timeline metadata.

A small repository (20 files) so that each turn's snapshot part is small and the same
at every turn; the session keeps every turn (`turns_per_session` above the turn count),
so the timeline grows to `TURNS` turns. Each turn is what an agent turn is through the
Engine: capture before, a one-line edit, capture after. Loose objects are counted
(nothing packs them during the run): every object a turn's two captures created, its
bytes on disk (zlib) and its raw size; "snapshot" objects are the turn's two snapshot
commits and the blobs and trees their trees reference that are new; everything else
(timeline blobs, trees and commits, the scan cache's anchor) is "metadata".

    python bench/timeline_bytes.py [TURNS] [MEASURED...]   # default 1000, at 10 100 1000

Run it against another checkout with `PYTHONPATH=/that/checkout/server` to compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pygit2

from turnback.config import Settings
from turnback.engine import Engine


def loose_objects(git_dir: Path) -> dict[str, int]:
    """Every loose object id with its size on disk."""
    out: dict[str, int] = {}
    objects = git_dir / "objects"
    for sub in objects.iterdir():
        if len(sub.name) == 2 and sub.is_dir():
            for entry in sub.iterdir():
                out[sub.name + entry.name] = entry.stat().st_size
    return out


def snapshot_objects(repo: pygit2.Repository, commits: list[str]) -> set[str]:
    """The snapshot commits and every tree and blob their trees reach."""
    seen: set[str] = set()
    stack: list[pygit2.Oid] = []
    for hex_ in commits:
        seen.add(hex_)
        stack.append(repo[pygit2.Oid(hex=hex_)].tree_id)
    while stack:
        oid = stack.pop()
        if str(oid) in seen:
            continue
        seen.add(str(oid))
        obj = repo[oid]
        if obj.type == pygit2.GIT_OBJECT_TREE:
            stack.extend(entry.id for entry in obj)
    return seen


def make_repo(root: Path) -> None:
    root.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent)}
    subprocess.run(["git", "init", "-q", str(root)], check=True, env=env)
    for i in range(20):
        (root / f"f{i:02d}.txt").write_text("".join(f"line {j} of file {i}\n" for j in range(50)))
    for args in (
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base"],
        ["-c", "gc.auto=0", "gc", "-q"],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)


def run(turns: int, measured: list[int]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="turnback-timeline-bytes-") as tmp:
        work = Path(tmp) / "work"
        make_repo(work)
        engine = Engine(str(work), Settings(turns_per_session=turns + 10))
        repo = engine.repo
        git_dir = Path(repo.path)
        results: dict[str, Any] = {}
        start = time.monotonic()
        for turn in range(1, turns + 1):
            before_objects = loose_objects(git_dir)
            t0 = time.perf_counter()
            opened = engine.capture(label=f"turn {turn}", phase="before")
            target = work / f"f{turn % 20:02d}.txt"
            target.write_text(target.read_text() + f"turn {turn}\n")
            sealed = engine.capture(phase="after")
            elapsed = time.perf_counter() - t0
            if turn not in measured:
                continue
            # A turn's objects land in a pack and become loose a few ms after the capture.
            engine.unpacking.wait()
            timeline = engine.store.load(opened.session)
            assert timeline is not None
            record = timeline.turns[-1]
            new = {o: s for o, s in loose_objects(git_dir).items() if o not in before_objects}
            snap = snapshot_objects(repo, [record.before, record.after or ""]) & set(new)
            meta = set(new) - snap

            def raw(ids: set[str]) -> int:
                return sum(len(repo.odb.read(pygit2.Oid(hex=o))[1]) for o in ids)

            results[str(turn)] = {
                "turn": turn,
                "sealed": sealed.sealed,
                "objects": len(new),
                "metadata_objects": len(meta),
                "metadata_disk_bytes": sum(new[o] for o in meta),
                "metadata_raw_bytes": raw(meta),
                "snapshot_disk_bytes": sum(new[o] for o in snap),
                "snapshot_raw_bytes": raw(snap),
                "two_captures_ms": round(elapsed * 1000, 1),
            }
            print(json.dumps(results[str(turn)]), flush=True)
        results["seconds"] = round(time.monotonic() - start, 1)
        engine.close()  # its unpacking thread would race the folder's removal
        return results


def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    measured = [int(a) for a in sys.argv[2:]] or [10, 100, 1000]
    print(json.dumps(run(turns, measured), indent=1))


if __name__ == "__main__":
    main()
