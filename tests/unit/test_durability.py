"""Durability of a restore: it flushes what it wrote, never the whole file system.

A flush of the whole file system (`syncfs`) made undo wait for every dirty page
other programs left (an agent's build output); a restore must fsync exactly the
files it wrote and the directories whose entries it changed, before its commit point.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from helpers import cli_json, cli_syscalls, make_repo, write
from turnback.core.durability import Touched, make_durable

FLUSH_CALLS = "fsync,fdatasync,syncfs,sync,sync_file_range"


def flushed_under_strace(repo: Path, *args: str) -> tuple[set[str], list[str]]:
    """Runs `turnback <args>` under strace: the work-tree paths fsynced, and any whole-file-
    system flush (syncfs/sync) it made."""
    trace = cli_syscalls(repo, FLUSH_CALLS, *args)
    fsynced = set(
        re.findall(r"fsync\(\d+<([^>]*)>", trace)
    )  # finished, or unfinished (side by side)
    whole = re.findall(r"\b(syncfs|sync)\(", trace)
    return fsynced, whole


# Proves an undo fsyncs each file it wrote and each directory whose entries it changed
# (including the parent of a directory it pruned), and never flushes the whole file system.
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_undo_flushes_exactly_its_files_and_directories(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "dir/b.txt": "b\n", "keep/c.txt": "c\n"})
    cli_json(repo, "capture", "--label", "turn")
    write(repo, "a.txt", "edited\n")
    (repo / "dir/b.txt").unlink()
    write(repo, "new/deep/x.txt", "created\n")
    cli_json(repo, "capture", "--phase", "after")

    fsynced, whole = flushed_under_strace(repo, "undo", "--json")

    real = repo.resolve()
    work = {p for p in fsynced if "/.git/" not in p + "/" and p.startswith(str(real))}
    expected = {str(real / "a.txt"), str(real / "dir/b.txt"), str(real / "dir"), str(real)}
    assert work == expected  # not keep/, not new/ (pruned: its parent, the root, is flushed)
    assert whole == []
    assert not (repo / "new").exists()


# Proves make_durable skips a file the user removed or replaced by a symlink since the write,
# rather than failing the restore or following the link.
def test_make_durable_tolerates_files_gone_or_replaced(tmp_path: Path):
    (tmp_path / "kept.txt").write_text("x\n")
    (tmp_path / "link").symlink_to(tmp_path / "kept.txt")
    touched = Touched()
    for name in ("kept.txt", "gone.txt", "link"):
        touched.wrote(tmp_path / name)
    touched.changed_entries_of(tmp_path / "no-such-dir")
    make_durable(touched)  # raises on any error it does not expect
    assert touched.dirs == {tmp_path, tmp_path / "no-such-dir"}


# Proves a FIFO the user put where the restore wrote a file neither blocks nor fails the
# flush (fsync of a FIFO is EINVAL): the restore's bytes are not there to flush.
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_make_durable_skips_a_fifo_put_in_place_of_a_written_file(tmp_path: Path):
    os.mkfifo(tmp_path / "was-a-file")
    touched = Touched()
    touched.wrote(tmp_path / "was-a-file")
    make_durable(touched)  # raised OSError(EINVAL) before the special-file check
    assert touched.files == {tmp_path / "was-a-file"}
