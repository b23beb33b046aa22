"""Bounds how much of the pack files libgit2 keeps mapped: most of a server's memory.

libgit2 maps a pack in windows of 1 GiB and keeps up to 8 GiB of them mapped (its
64-bit defaults), and every page a read touched stays in the process's resident set
for as long as the window is mapped (the kernel also maps the pages around a fault).
Reading the ~1,800 trees of a 100k-file repository, spread through its 310 MB pack,
so left 64 MiB of the pack resident after the first capture and 135 MiB after a few
full scans, for the server's whole life (bench/profile_rss.py). Small windows under
a small limit are unmapped least-recently-used: the pages stay in the page cache,
only the mapping goes, so a later read costs a page fault, not a disk read.
"""

from __future__ import annotations

import pygit2

#: Bytes per mapped window, and all windows mapped at once (libgit2: 1 GiB and 8 GiB).
WINDOW = 4 * 2**20
MAPPED_LIMIT = 32 * 2**20


def bound() -> None:
    """Applies the limits to the process's libgit2 (global settings; idempotent)."""
    if pygit2.settings.mwindow_size != WINDOW:
        pygit2.settings.mwindow_size = WINDOW
    if pygit2.settings.mwindow_mapped_limit != MAPPED_LIMIT:
        pygit2.settings.mwindow_mapped_limit = MAPPED_LIMIT


bound()
