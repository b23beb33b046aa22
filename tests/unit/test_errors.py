"""What the documented errors say to the user."""

from __future__ import annotations

import errno
import os

from turnback.errors import StorageFailed


# Fails when running out of file descriptors (a workspace of many repositories under
# `ulimit -n 64`) is answered with advice about disk space rather than the limit to raise.
def test_too_many_open_files_names_the_limit_to_raise():
    for code in (errno.EMFILE, errno.ENFILE):
        message = str(StorageFailed.from_os_error(OSError(code, os.strerror(code), "/r/.git")))
        assert "ulimit -n" in message and "free some space" not in message
    libgit2 = OSError("could not open '/r/.git/index': Too many open files")  # no errno
    assert "ulimit -n" in str(StorageFailed.from_os_error(libgit2))
    full = str(StorageFailed.from_os_error(OSError(errno.ENOSPC, "No space left on device")))
    assert "free some space" in full
