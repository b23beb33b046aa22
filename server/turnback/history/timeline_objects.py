"""A timeline as git objects, laid out so that what one save writes does not grow with it.

A timeline commit (format 2) has this tree:

    session.json               the header: session, nextTurn, times, rescued versions
    turns/<g>/<b>/<n>.json     one blob per turn n, in bucket b = n // 32, group g = n // 1024

and as parents one *group commit* per group (its tree is `turns/<g>`, its parents the
group's *bucket commits*: tree `turns/<g>/<b>`, parents the snapshots of the bucket's
turns), then the rescued versions' commits. So the timeline ref still reaches exactly
the snapshots the timeline uses, and `git gc` frees a pruned turn's.

Bucket and group commits carry a fixed signature time: the same content is the same
object, which libgit2 does not write again. A save reuses the blobs and trees of the
turns, buckets and groups it did not change (known from the load, see `Layout`), so it
writes the changed turns' blobs, one bucket tree and commit, one group tree and commit,
the `turns` and root trees, the header and the timeline commit: a bounded number of
bounded objects, whatever the session's length. Format 1 (`timeline.json` with every
turn, every snapshot a parent) still loads; the next save writes format 2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

import pygit2

from ..core.objectwrites import write_blob, write_commit, written

#: The header's name in format 2. A turnback that knows only `timeline.json` finds no
#: timeline there and refuses to load it, rather than saving it back without its turns.
HEADER = "session.json"
LEGACY = "timeline.json"
TURNS = "turns"
FORMAT = 2
BUCKET = 32
GROUP = 1024
#: Bucket and group commits: content-addressed, so no clock in them.
_FIXED = pygit2.Signature("turnback", "turnback@localhost", 0, 0)


@dataclass
class Layout:
    """What a stored timeline commit holds, so that a save can reuse what it did not change."""

    #: turn number -> (the turn's JSON as stored, its blob)
    turns: dict[int, tuple[bytes, pygit2.Oid]] = field(default_factory=dict)
    #: bucket number -> its tree; group number -> its tree
    buckets: dict[int, pygit2.Oid] = field(default_factory=dict)
    groups: dict[int, pygit2.Oid] = field(default_factory=dict)
    #: bucket and group commits, once written (a layout read from disk has none): the
    #: same tree has the same parents, so its commit is the same object. libgit2 looks up
    #: every parent of a commit it creates (~0.5 ms a bucket of 32 turns), and a save
    #: would otherwise make each unchanged bucket's commit again.
    bucket_commits: dict[int, pygit2.Oid] = field(default_factory=dict)
    group_commits: dict[int, pygit2.Oid] = field(default_factory=dict)


def turn_bytes(record: Any) -> bytes:
    """A turn record as stored: ASCII JSON (names may not be UTF-8). Its fields hold
    JSON values only, so no `asdict` (a deep copy, most of a save's time at 1,000 turns)."""
    names = _FIELDS.get(type(record)) or _FIELDS.setdefault(
        type(record), [f.name for f in fields(record)]
    )
    return json.dumps({n: getattr(record, n) for n in names}, separators=(",", ":")).encode()


_FIELDS: dict[type, list[str]] = {}


class NewerFormat(Exception):
    """A timeline a newer turnback wrote, in a format this one does not know: read as
    format 2, it looked empty, and the next capture saved it back without its turns."""

    def __init__(self, version: int) -> None:
        super().__init__(f"format {version}; this turnback reads up to format {FORMAT}")
        self.version = version


def read_header(repo: pygit2.Repository, commit: pygit2.Commit) -> dict[str, Any]:
    """The header alone, without reading a turn (format 1: the whole JSON, turns included);
    NewerFormat for a format after this one's."""
    tree = commit.tree
    header = json.loads(repo[tree[HEADER if HEADER in tree else LEGACY].id].data)
    version = header.get("version") if isinstance(header, dict) else None
    if isinstance(version, int) and version > FORMAT:
        raise NewerFormat(version)
    return header


def count_turns(repo: pygit2.Repository, commit: pygit2.Commit, header: dict[str, Any]) -> int:
    """How many turns a timeline holds, from its turn trees (format 2) or its one JSON
    (format 1, whose header is the whole timeline)."""
    tree = commit.tree
    if HEADER not in tree:
        return len(header.get("turns", []))
    if TURNS not in tree:
        return 0
    return sum(len(repo[bucket.id]) for group in repo[tree[TURNS].id] for bucket in repo[group.id])


def read(
    repo: pygit2.Repository, commit: pygit2.Commit, known: Layout | None = None
) -> tuple[dict[str, Any], Layout | None]:
    """The timeline JSON (format 1's shape, turns included) and, for format 2, its layout.

    `known` is this commit's layout if it was read or written before: its turns are
    then not read again.
    """
    tree = commit.tree
    data = read_header(repo, commit)
    if HEADER not in tree:
        return data, None
    layout = known or Layout()
    if known is None and TURNS in tree:
        for group in repo[tree[TURNS].id]:
            layout.groups[int(group.name)] = group.id
            for bucket in repo[group.id]:
                layout.buckets[int(bucket.name)] = bucket.id
                for blob in repo[bucket.id]:
                    number = int(blob.name.removesuffix(".json"))
                    layout.turns[number] = (repo[blob.id].data, blob.id)
    data["turns"] = [json.loads(layout.turns[n][0]) for n in sorted(layout.turns)]
    return data, layout


@dataclass
class _Node:
    """A bucket or group being written: its entries and the commits it keeps alive."""

    entries: dict[str, pygit2.Oid] = field(default_factory=dict)
    parents: list[pygit2.Oid] = field(default_factory=list)


def write(
    repo: pygit2.Repository,
    header: dict[str, Any],
    turns: list[Any],
    extra_parents: list[str],
    message: str,
    signature: pygit2.Signature,
    base: Layout | None,
) -> tuple[pygit2.Oid, Layout]:
    """Writes a format-2 timeline commit (no ref names it) and returns it with its layout.

    `turns` are TurnRecords (numbers unique); `base` is the layout of a commit whose
    objects are still reachable (the one the session's ref names), or None.
    """
    base = base or Layout()
    layout = Layout()
    buckets: dict[int, _Node] = {}
    for record in turns:
        number = record.turn
        if number in layout.turns:
            raise ValueError(f"turn {number} twice in one timeline")
        data = turn_bytes(record)
        old = base.turns.get(number)
        oid = old[1] if old is not None and old[0] == data else write_blob(repo, data)
        layout.turns[number] = (data, oid)
        node = buckets.setdefault(number // BUCKET, _Node())
        node.entries[f"{number}.json"] = oid
        node.parents.extend(c for c in map(_oid, record.commits()) if c not in node.parents)
    stored_buckets = _by_parent({f"{n}.json": (n // BUCKET, o) for n, (_, o) in base.turns.items()})
    groups: dict[int, _Node] = {}
    for number, node in sorted(buckets.items()):
        tree = _tree(repo, node.entries, stored_buckets.get(number), base.buckets.get(number))
        layout.buckets[number] = tree
        group = groups.setdefault(number * BUCKET // GROUP, _Node())
        group.entries[str(number)] = tree
        commit = _same_commit(base.buckets, base.bucket_commits, number, tree)
        layout.bucket_commits[number] = commit or _fixed_commit(repo, tree, node.parents)
        group.parents.append(layout.bucket_commits[number])
    stored_groups = _by_parent({str(b): (b * BUCKET // GROUP, o) for b, o in base.buckets.items()})
    root = repo.TreeBuilder()
    root.insert(HEADER, write_blob(repo, json.dumps(header).encode()), pygit2.GIT_FILEMODE_BLOB)
    parents: list[pygit2.Oid] = []
    if groups:
        top = repo.TreeBuilder()
        for number, node in sorted(groups.items()):
            tree = _tree(repo, node.entries, stored_groups.get(number), base.groups.get(number))
            layout.groups[number] = tree
            top.insert(str(number), tree, pygit2.GIT_FILEMODE_TREE)
            commit = _same_commit(base.groups, base.group_commits, number, tree)
            layout.group_commits[number] = commit or _fixed_commit(repo, tree, node.parents)
            parents.append(layout.group_commits[number])
        root.insert(TURNS, written(top.write), pygit2.GIT_FILEMODE_TREE)
    parents.extend(p for p in map(_oid, extra_parents) if p not in parents)
    oid = write_commit(repo, signature, signature, message, written(root.write), parents)
    return oid, layout


def _oid(hex_: str) -> pygit2.Oid:
    return pygit2.Oid(hex=hex_)


def _by_parent(
    entries: dict[str, tuple[int, pygit2.Oid]],
) -> dict[int, dict[str, pygit2.Oid]]:
    """Stored entries grouped by the bucket (or group) that holds them."""
    out: dict[int, dict[str, pygit2.Oid]] = {}
    for name, (parent, oid) in entries.items():
        out.setdefault(parent, {})[name] = oid
    return out


def _tree(
    repo: pygit2.Repository,
    entries: dict[str, pygit2.Oid],
    stored: dict[str, pygit2.Oid] | None,
    stored_tree: pygit2.Oid | None,
) -> pygit2.Oid:
    """The node's tree: the stored one if its entries are the same, else a new one."""
    if stored_tree is not None and stored == entries:
        return stored_tree
    builder = repo.TreeBuilder()
    for name, oid in entries.items():
        mode = pygit2.GIT_FILEMODE_BLOB if name.endswith(".json") else pygit2.GIT_FILEMODE_TREE
        builder.insert(name, oid, mode)
    return written(builder.write)


def _same_commit(
    trees: dict[int, pygit2.Oid], commits: dict[int, pygit2.Oid], number: int, tree: pygit2.Oid
) -> pygit2.Oid | None:
    """The stored bucket's (or group's) commit when its tree is unchanged: the tree names
    the turns' blobs, which hold every snapshot the commit has as a parent."""
    return commits.get(number) if trees.get(number) == tree else None


def _fixed_commit(
    repo: pygit2.Repository, tree: pygit2.Oid, parents: list[pygit2.Oid]
) -> pygit2.Oid:
    """A bucket or group commit: the same tree and parents give the same, unwritten, object."""
    return write_commit(repo, _FIXED, _FIXED, "turnback turns\n", tree, parents)
