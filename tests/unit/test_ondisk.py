"""core/ondisk.py: what a rollback or a recovery sees at a path before it writes there."""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
from pygit2.enums import FileMode

from turnback.core.ondisk import look
from turnback.core.treeops import Entry


# Ensures a file matches a state of either regular mode where the disk keeps no exec bits
# (every file reads 0777 there), and only the state's own mode elsewhere; content decides.
def test_a_file_matches_either_mode_only_on_a_disk_without_exec_bits(tmp_path: Path):
    (tmp_path / "run.sh").write_bytes(b"echo hi\n")
    os.chmod(tmp_path / "run.sh", 0o777)
    oid = str(pygit2.hash(b"echo hi\n"))
    plain, executable = Entry(oid, FileMode.BLOB), Entry(oid, FileMode.BLOB_EXECUTABLE)
    assert look(tmp_path, "run.sh", exec_bits=False).matches(plain)
    assert look(tmp_path, "run.sh", exec_bits=False).matches(executable)
    assert not look(tmp_path, "run.sh").matches(plain)
    other = Entry(str(pygit2.hash(b"echo bye\n")), FileMode.BLOB)
    assert not look(tmp_path, "run.sh", exec_bits=False).matches(other)
    assert not look(tmp_path, "run.sh", exec_bits=False).matches(None)
