"""Moving trees between object databases: copy what one lacks, graft trees into another.

A workspace's snapshot holds its member repositories' trees: each member's tree is copied
into the workspace's object database (only what it lacks; a large first copy as one pack)
and grafted at the member's path in one pass over the root tree.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pygit2
from pygit2.enums import FileMode, ObjectType

from .objectwrites import written
from .packfile import write_pack
from .repository import common_dir

#: Reads one object: its git type number and content.
Reader = Callable[[pygit2.Oid], tuple[int, bytes]]
#: Above this many missing objects, a copy writes one pack instead of loose objects (a
#: member's first capture: thousands of files, each a loose file otherwise).
PACK_THRESHOLD = 256


def missing_objects(
    src: pygit2.Repository, dst: pygit2.Repository, oid: pygit2.Oid
) -> list[pygit2.Oid]:
    """`oid` and everything below it that `dst` lacks (gitlinks aside), children first.

    A tree `dst` has is complete: copies write a tree only with (or after) its children.
    Not in a partial clone (`git clone --filter=blob:none`): its trees stand without the
    blobs it was promised, which libgit2 cannot fetch, so a member's files the workspace
    already had the tree of were in no object database it could read (an undo of the
    member's deletion refused "missing object"). There a tree `dst` has is looked into,
    once: one found complete is remembered (`_complete`), so a capture walks what changed.
    """
    complete = None if not is_partial_clone(dst) else _complete.setdefault(dst.path, set())
    out: list[pygit2.Oid] = []
    pending: list[tuple[pygit2.Oid, bool]] = [(oid, False)]
    seen: set[pygit2.Oid] = set()
    walked: list[pygit2.Oid] = []  # trees dst has, looked into
    while pending:
        current, children_done = pending.pop()
        if children_done:
            out.append(current)
            continue
        if current in seen:
            continue
        seen.add(current)
        if dst.odb.exists(current):
            if complete is None or current in complete:
                continue
            obj = dst[current]
            if obj.type == ObjectType.TREE:
                walked.append(current)
                pending.extend(_children(obj))
            continue
        pending.append((current, True))
        obj = src[current]
        if obj.type == ObjectType.TREE:
            pending.extend(_children(obj))
    if complete is not None:
        if len(complete) > _COMPLETE_LIMIT:
            complete.clear()
        if not out:  # (else the copy completes them; the next capture finds them so)
            complete.update(walked)
    return out


#: Trees of a partial clone found to hold every object below them, by repository.
_complete: dict[str, set[pygit2.Oid]] = {}
_COMPLETE_LIMIT = 1_000_000
#: Whether each repository is a partial clone, by path (its config read once).
_partial: dict[str, bool] = {}


def _children(tree: pygit2.Object) -> list[tuple[pygit2.Oid, bool]]:
    return [(e.id, False) for e in tree if e.filemode != FileMode.COMMIT]  # type: ignore[attr-defined]


def is_partial_clone(repo: pygit2.Repository) -> bool:
    """Whether `repo` was cloned with a filter: objects may be promised, not present."""
    known = _partial.get(repo.path)
    if known is not None:
        return known
    config = repo.config
    partial = "extensions.partialclone" in config or any(
        entry.name.startswith("remote.")
        and entry.name.endswith(".promisor")
        and entry.value.lower() in ("true", "yes", "on", "1")
        for entry in config
    )
    _partial[repo.path] = partial
    return partial


def copy_missing(
    src: pygit2.Repository, dst: pygit2.Repository, oid: pygit2.Oid, read: Reader | None = None
) -> None:
    """Copies the object `oid` and everything below it that `dst` lacks into `dst`.

    `read` reads what `src` holds in memory (heldobjects.py), which neither libgit2's
    packer nor `Odb.read` sees."""
    if src.path == dst.path:
        return
    missing = missing_objects(src, dst, oid)
    if len(missing) > PACK_THRESHOLD:
        pack_dir = common_dir(Path(dst.path)) / "objects" / "pack"
        pack_dir.mkdir(parents=True, exist_ok=True)
        if read is None:
            packer = pygit2.PackBuilder(src)
            for current in missing:
                packer.add(current)
            packer.write(str(pack_dir))
        else:
            write_pack(pack_dir, len(missing), ((o.raw, *read(o)) for o in missing))
        if dst.odb.exists(oid):
            return
        # A pack the object database does not see (an unusual layout): loose objects.
    read = read or (lambda current: src.odb.read(current)[:2])
    for current in missing:
        kind, data = read(current)
        written(lambda: dst.odb.write(kind, data))  # noqa: B023


def graft(repo: pygit2.Repository, base: pygit2.Oid, grafts: dict[str, pygit2.Oid]) -> pygit2.Oid:
    """`base` with each tree of `grafts` at its path (replacing a gitlink or anything else
    there; an empty tree removes the path), in one pass: each tree on the way is written
    once, however many members sit below it."""
    return written(lambda: _graft(repo, base, grafts))


def _graft(repo: pygit2.Repository, base: pygit2.Oid, grafts: dict[str, pygit2.Oid]) -> pygit2.Oid:
    direct: dict[str, pygit2.Oid] = {}
    nested: dict[str, dict[str, pygit2.Oid]] = {}
    for path, sub in grafts.items():
        head, _, rest = path.partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = sub
        else:
            direct[head] = sub
    builder = repo.TreeBuilder(repo[base])
    for head in sorted(direct.keys() | nested.keys()):
        new = direct.get(head)
        if new is None:
            existing = builder.get(head)
            new = existing.id if existing and existing.filemode == FileMode.TREE else None
        if head in nested:
            new = _graft(repo, new or repo.TreeBuilder().write(), nested[head])
        if len(repo[new]) == 0:  # type: ignore[arg-type]
            if builder.get(head) is not None:
                builder.remove(head)
        else:
            builder.insert(head, new, FileMode.TREE)
    return builder.write()
