"""turnback's own packs: one per capture, merged before git finds too many.

A capture used to write its few new objects (the changed files' blobs, the trees above
them) loose: one file created and flushed per object, 50-100 ms of a capture on a real
tree. One small pack per capture costs three flushes instead (`packfile.write_pack`), but
packs add up: past `gc.autoPackLimit` (50) git's next `gc --auto` repacks the repository
during the user's commit, and every pack costs each object lookup. So turnback lists the
packs it wrote (a hint file beside its lock) and, once `MERGE_AT` of them are small,
merges the newest into one: after the capture has answered, on a thread of the engine's
(the merge's delta search costs 0.1-0.3 s on linux's tree, which no agent should wait
for), under the repository's lock like any other write.

A merge writes deltas, as `git repack` would: each object is named by the tree that lists
it, so libgit2's packbuilder stores a file's or folder's new version as its change from
the last. git's incremental repack (`repack -d`) packs only loose objects, so packs
merged whole would stay whole until the user's next full gc: 1.49x the bytes `git
commit` adds for the same turns (bench/README.md, run r), where loose objects came to
1.02x. The merged pack's index lists the ids libgit2 computed from what it wrote; it must
name exactly the objects merged, or nothing is deleted.

A merge is safe at every point: the merged pack is on stable storage before any old one
is deleted, and an old one is deleted index first, so a reader sees each object in at
least one pack. A pack with a `.keep` is never deleted; where a `multi-pack-index`
names packs, nothing is packed or deleted (captures write loose objects, as git would).
Losing the list only leaves packs unmerged, for git's own gc to take.
"""

from __future__ import annotations

import logging
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pygit2

from . import faults
from .durability import Touched, make_durable
from .pygit2_internals import write_delta_pack
from .treeops import raw_tree_entries

log = logging.getLogger(__name__)

#: Small packs of turnback's that trigger a merge: well under git's `gc.autoPackLimit`.
MERGE_AT = 10
#: A pack with this many objects is left as it is, so a merge never rewrites more than
#: ~2x: its delta search costs ~0.4 ms an object on linux's tree (a capture waits for it).
SETTLED = 1_000
_IDX_HEADER = b"\xfftOc" + struct.pack(">I", 2)
_FANOUT_END = 8 + 256 * 4
#: A merge writes its pack in a folder of this prefix inside the pack folder, first.
_STAGING = "tmp_turnback_merge_"
#: git's type number of a tree.
_TREE = 2


@dataclass(frozen=True)
class OwnPack:
    name: str  # pack-<checksum>, without suffix
    objects: int


class OwnPacks:
    """The packs turnback wrote into one objects folder, oldest first."""

    def __init__(self, objects_dir: Path, list_path: Path) -> None:
        self.pack_dir = objects_dir / "pack"
        self.list_path = list_path
        #: Whether the last pack `added` made a merge due.
        self.due = False

    def usable(self) -> bool:
        """Whether a capture may write a pack here: not where a multi-pack-index may name
        packs that a merge would delete, nor on Windows, where a pack that a handle has
        open cannot be deleted (packs would add up unmerged)."""
        return os.name != "nt" and not (self.pack_dir / "multi-pack-index").exists()

    def added(self, pack: Path, objects: int) -> None:
        """Records a pack just written; `due` then says whether a merge should follow.

        The pack is already on stable storage: a list that cannot be written is logged,
        never the capture's failure (it only leaves packs unmerged)."""
        try:
            packs = self._load()
            packs.append(OwnPack(pack.stem, objects))
            self._save(packs)
            self.due = bool(merge_due(packs))
        except OSError as error:
            log.warning("turnback: could not list its packs in %s: %s", self.pack_dir, error)

    def merge(self, repo: pygit2.Repository) -> None:
        """Merges the newest small packs if enough have added up. Run under the
        repository's lock, after the capture that wrote the last one has answered."""
        self.due = False
        try:
            packs = self._load()
            due = merge_due(packs)
            if due and self.usable():
                self._merge(packs, due, repo)
        except (OSError, ValueError, KeyError, pygit2.GitError) as error:
            log.warning("turnback: could not merge its packs in %s: %s", self.pack_dir, error)

    def _merge(self, packs: list[OwnPack], due: list[OwnPack], repo: pygit2.Repository) -> None:
        ids = list(dict.fromkeys(raw for pack in due for raw in pack_ids(self._path(pack, ".idx"))))
        merged = self._write_merged(ids, repo)
        faults.step("pack merged")
        kept = [pack for pack in packs if pack not in due]
        self._save(kept + [OwnPack(merged.stem, len(ids))])
        for pack in due:
            if pack.name == merged.stem or self._path(pack, ".keep").exists():
                continue  # the same pack again (a merge cut short, redone), or kept
            for suffix in (".idx", ".rev", ".pack"):  # the index first: it publishes a pack
                self._path(pack, suffix).unlink(missing_ok=True)
            faults.step("pack deleted")

    def _write_merged(self, ids: list[bytes], repo: pygit2.Repository) -> Path:
        """One pack of `ids`, each object a delta against a similar one where that pays
        (as `git repack` would write them), checked and on stable storage before its
        index appears in the pack folder."""
        for stale in self.pack_dir.glob(f"{_STAGING}*"):  # a merge killed midway
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=_STAGING, dir=self.pack_dir))
        try:
            write_delta_pack(repo, list(_named(ids, repo).items()), str(staging), _threads())
            (index,) = staging.glob("pack-*.idx")
            if sorted(pack_ids(index)) != sorted(ids):
                # The index lists the ids libgit2 computed from what it wrote: anything
                # else than what was asked for is a broken pack, and nothing is deleted.
                raise ValueError(f"a merged pack does not hold what was merged: {index.name}")
            pack = index.with_suffix(".pack")
            final = [self.pack_dir / pack.name, self.pack_dir / index.name]
            make_durable(Touched(files={pack, index}))
            for source, target in zip((pack, index), final, strict=True):
                os.replace(source, target)  # the index last: it is what publishes the pack
            make_durable(Touched(dirs={self.pack_dir}))
            return final[0]
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _path(self, pack: OwnPack, suffix: str) -> Path:
        return self.pack_dir / f"{pack.name}{suffix}"

    def _load(self) -> list[OwnPack]:
        """The listed packs that are still there (git's gc may have repacked them)."""
        try:
            lines = self.list_path.read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            return []
        packs = []
        for line in lines:
            name, _, count = line.partition(" ")
            if name.startswith("pack-") and count.isdigit():
                pack = OwnPack(name, int(count))
                if self._path(pack, ".idx").exists() and not self._path(pack, ".keep").exists():
                    packs.append(pack)
        return packs

    def _save(self, packs: list[OwnPack]) -> None:
        """Replaces the list at once; not flushed: a list lost in a crash costs a merge."""
        temporary = self.list_path.with_name(self.list_path.name + ".tmp")
        temporary.write_text("".join(f"{p.name} {p.objects}\n" for p in packs))
        os.replace(temporary, self.list_path)


def merge_due(packs: list[OwnPack]) -> list[OwnPack]:
    """The packs to merge now: none until `MERGE_AT` are small, then the newest two and
    every older small one no larger than those taken together (so each object is
    rewritten about log2 times, and a merge stays under ~2x `SETTLED`)."""
    small = [pack for pack in packs if pack.objects < SETTLED]
    if len(small) < MERGE_AT:
        return []
    due = small[-2:]
    total = sum(pack.objects for pack in due)
    for pack in reversed(small[:-2]):
        if pack.objects > total:
            break
        due.insert(0, pack)
        total += pack.objects
    return due


def pack_ids(idx: Path) -> list[bytes]:
    """The object ids a version-2 pack index lists."""
    with open(idx, "rb") as stream:
        head = stream.read(_FANOUT_END)
        if len(head) != _FANOUT_END or head[:8] != _IDX_HEADER:
            raise ValueError(f"not a version 2 pack index: {idx}")
        (count,) = struct.unpack(">I", head[-4:])
        data = stream.read(count * 20)
    if len(data) != count * 20:
        raise ValueError(f"truncated pack index: {idx}")
    return [data[i : i + 20] for i in range(0, len(data), 20)]


def _named(ids: list[bytes], repo: pygit2.Repository) -> dict[bytes, bytes]:
    """Each object with the name a tree among them gives it (commits and top trees get
    none): the packbuilder looks for a delta base among objects of similar names, so each
    file's and folder's new version is stored as its change from the last."""
    names = dict.fromkeys(ids, b"")
    odb = repo.odb
    for raw in ids:
        kind, data = odb.read(pygit2.Oid(raw=raw))
        if kind == _TREE:
            for _mode, name, child in raw_tree_entries(data):
                if child in names:
                    names[child] = name
    return names


def _threads() -> int:
    """The packbuilder's threads: its delta search is most of a merge's cost."""
    return max(1, min(4, os.cpu_count() or 1))
