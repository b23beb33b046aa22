"""What a repository's object database holds, as files on disk: the loose objects, the
packs, and the packs turnback listed for unpacking (core/ownpacks.py)."""

from __future__ import annotations

from pathlib import Path


def loose_objects(root: Path) -> set[str]:
    """The ids of the work tree's loose objects."""
    objects = root / ".git" / "objects"
    return {p.parent.name + p.name for p in objects.glob("[0-9a-f][0-9a-f]/*")}


def pack_names(root: Path) -> set[str]:
    """The names of its packs (`pack-<id>`), as turnback's pack list names them."""
    return {p.stem for p in (root / ".git" / "objects" / "pack").glob("pack-*.pack")}


def listed_packs(root: Path) -> list[str]:
    """The packs turnback wrote and has not unpacked yet."""
    listed = root / ".git" / "turnback" / "packs"
    return listed.read_text().split() if listed.exists() else []
