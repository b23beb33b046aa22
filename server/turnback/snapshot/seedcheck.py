"""Which entries of a copy of the user's index may not hold the bytes on disk.

The private index starts as a copy of the user's, so its unchanged entries name
git's *cleaned* blobs: with line-ending conversion (`core.autocrlf`, `text`/`eol`
attributes), `ident`, a clean/smudge filter (Git LFS) or `working-tree-encoding`,
that blob is not the file on disk; a skip-worktree or assume-unchanged entry
names whatever git last staged, whatever the file holds now. Those entries are
hashed again, raw, on the first capture after seeding.

Only seeding can bring such an entry in: every entry turnback adds itself holds
the raw bytes and their size, and libgit2's filters only ever shrink a file on
its way into git (CRLF to LF, `$Id: ...$` to `$Id$`), so a later filtered compare
that finds "unchanged" at an equal size means the raw bytes are unchanged too.
The check is cheap where nothing converts: no attribute file mentioning a
conversion attribute and no `core.autocrlf` means no per-path work at all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

import pygit2

from ..core import indexfile
from ..core.gitpaths import is_utf8
from ..core.indexfile import ASSUME_UNCHANGED, GITLINK, SKIP_WORKTREE
from ..core.pygit2_internals import entry_at, entry_path, has_filters

#: Attributes under which the bytes on disk may differ from the blob git stores.
_CONVERTING = re.compile(rb"\b(text|eol|crlf|ident|filter|working-tree-encoding)\b")
_DRIVER = re.compile(rb"\b(filter|working-tree-encoding)\b")


def _entries(index: pygit2.Index) -> list[tuple[str, int, int, int]]:
    """(path, flags, extended flags, mode) of every entry, read through the C structs."""
    out = []
    for position in range(len(index)):
        entry = entry_at(index, position)
        path = os.fsdecode(entry_path(entry))
        out.append((path, entry.flags, entry.flags_extended, entry.mode))
    return out


def _global_attributes(repo: pygit2.Repository) -> Path | None:
    try:
        configured = repo.config["core.attributesFile"]
    except (KeyError, pygit2.GitError):
        configured = None
    if configured:
        return Path(os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(xdg) / "git" / "attributes"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _autocrlf(repo: pygit2.Repository) -> bool:
    try:
        value = str(repo.config["core.autocrlf"]).lower()
    except (KeyError, pygit2.GitError):
        return False
    return value not in ("false", "no", "off", "0", "")


class SeedCheck(NamedTuple):
    """What a seed's bytes say about it."""

    #: The entries the file declares.
    count: int | None
    #: The entries to hash again (None for a layout indexfile does not read).
    paths: list[str] | None
    #: Whether the file's cache-tree names its whole tree: libgit2 then "writes" the
    #: tree without writing anything, and a first capture updates it path-wise.
    tree_cached: bool = False


def untrusted_in_file(
    repo: pygit2.Repository, index_file: Path, root: Path, common_dir: Path | None
) -> SeedCheck:
    """The seed's facts read from its bytes (core/indexfile.py), with None for the paths
    of a layout indexfile does not read. It needs no loaded index, so it can run while
    libgit2 loads one (with the GIL released)."""
    data = _read(index_file)
    count = indexfile.count(data)
    found = indexfile.seed_facts(data)
    if found is None:
        return SeedCheck(count, None)
    flagged, attributes = (sorted(os.fsdecode(p) for p in found[i]) for i in (0, 1))
    text = _attribute_text(repo, root, common_dir, attributes)
    if not _converting(repo, text):
        return SeedCheck(count, flagged, found[2])
    every = indexfile.paths(data) or []
    return SeedCheck(
        count, _convertible(repo, [os.fsdecode(p) for p in every], flagged, text), found[2]
    )


def untrusted_entries(
    repo: pygit2.Repository,
    index: pygit2.Index,
    index_file: Path,
    root: Path,
    common_dir: Path | None,
    from_file: SeedCheck | None = None,
) -> list[str]:
    """Paths (files, not submodules) whose seeded blob may differ from the file on disk.

    Read from `index_file`'s bytes (`from_file`, if they were read already) when it
    holds what `index` holds (the same number of entries: the scanner checks right
    after loading it), otherwise, or for a layout indexfile does not read, through
    libgit2.
    """
    check = from_file or untrusted_in_file(repo, index_file, root, common_dir)
    if check.paths is not None and check.count == len(index):
        return check.paths
    return _untrusted_in(repo, index, root, common_dir)


def _untrusted_in(
    repo: pygit2.Repository, index: pygit2.Index, root: Path, common_dir: Path | None
) -> list[str]:
    """The same, one entry at a time through libgit2."""
    entries = [e for e in _entries(index) if e[3] != GITLINK]
    flagged = [
        path
        for path, flags, extended, _mode in entries
        if flags & ASSUME_UNCHANGED or extended & SKIP_WORKTREE
    ]
    attributes = [p for p, *_ in entries if p.rpartition("/")[2] == ".gitattributes"]
    text = _attribute_text(repo, root, common_dir, attributes)
    if not _converting(repo, text):
        return flagged
    return _convertible(repo, [p for p, *_ in entries], flagged, text)


def _attribute_text(
    repo: pygit2.Repository, root: Path, common_dir: Path | None, attributes: list[str]
) -> bytes:
    sources = [root / p for p in attributes]
    sources.append(root / ".gitattributes")
    if common_dir is not None:
        sources.append(common_dir / "info" / "attributes")
    if (global_file := _global_attributes(repo)) is not None:
        sources.append(global_file)
    text = b"\n".join(_read(p) for p in sources)
    return b"\n".join(line for line in text.splitlines() if not line.lstrip().startswith(b"#"))


def _converting(repo: pygit2.Repository, text: bytes) -> bool:
    """Whether any path may be converted on its way into git: no per-path work otherwise."""
    return _autocrlf(repo) or _CONVERTING.search(text) is not None


def _convertible(
    repo: pygit2.Repository, paths: list[str], flagged: list[str], text: bytes
) -> list[str]:
    """`flagged` and every path a filter, line-ending or encoding conversion applies to."""
    drivers = _DRIVER.search(text) is not None
    chosen = set(flagged)
    for path in paths:
        if path in chosen:
            continue
        if not is_utf8(path):
            chosen.add(path)  # pygit2 asks libgit2 in strict UTF-8 only: hash it raw again
        elif has_filters(repo, path) or (
            drivers
            and (repo.get_attr(path, "filter") or repo.get_attr(path, "working-tree-encoding"))
        ):
            chosen.add(path)
    return sorted(chosen)
