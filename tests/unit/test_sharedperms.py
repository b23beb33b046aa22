"""core/sharedperms.py where the platform keeps no owners (Windows)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from turnback.core.sharedperms import share_folder_tree, share_object_folders


# Ensures a shared repository (core.sharedRepository) costs nothing where os.geteuid does
# not exist (Windows, stood in for by removing it): every operation there failed with an
# AttributeError after it was done.
def test_shared_bits_are_skipped_without_owners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "objects" / "ab").mkdir(parents=True)
    monkeypatch.delattr(os, "geteuid", raising=False)
    share_object_folders(tmp_path / "objects", 0o070)
    share_folder_tree(tmp_path / "objects", 0o070)
    assert (tmp_path / "objects" / "ab").is_dir()
