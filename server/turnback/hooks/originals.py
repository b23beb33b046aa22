"""What a harness config held before `turnback hooks install` changed it.

Uninstall removes turnback's entries; but install also reformats the file (indent 2,
escapes decoded), may add keys (Cursor's `"version": 1`), and may create the file. So
install keeps the file's bytes from before it (none: there was no file) with the text it
wrote, in the user's state folder; while the file still holds exactly that text, uninstall
puts the old bytes back, or removes the file install created. A file edited since is
handled entry by entry, and one that existed before is never removed.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .hookstate import user_state_dir

#: What `restore` found: put back, edited since (the file existed before install, or not),
#: or nothing known (installed by an older turnback, or by hand).
RESTORED, EDITED_EXISTED, EDITED_CREATED, UNKNOWN = "restored", "existed", "created", "unknown"


def _record_path(config: Path) -> Path:
    name = os.fsencode(os.path.abspath(config))
    return user_state_dir() / "hook-configs" / f"{hashlib.sha256(name).hexdigest()[:32]}.json"


def _current(config: Path) -> bytes | None:
    try:
        return config.read_bytes()
    except FileNotFoundError:
        return None


def _read(config: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(_record_path(config).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and "written" in record else None


def remember(config: Path, before: bytes | None, written: str, had_ours: bool) -> None:
    """Notes what an install replaced (`before`) with `written`. A refreshed install keeps
    the first install's `before`; a file that already held turnback's entries with no
    record has no known original, and gets none."""
    record = _read(config)
    if record is not None and before == record["written"].encode("utf-8"):
        kept = record.get("before")
    elif had_ours:
        return
    else:
        kept = base64.b64encode(before).decode("ascii") if before is not None else None
    path = _record_path(config)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"config": str(config), "before": kept, "written": written}))
    except OSError:
        pass  # uninstall then removes entries one by one, as it always could


def restore(config: Path, write: Any) -> str:
    """Puts back what the config held before install when it still holds what install
    wrote (`write(path, bytes)` writes atomically); says what it found (see above)."""
    record = _read(config)
    if record is None:
        return UNKNOWN
    _record_path(config).unlink(missing_ok=True)
    before = record.get("before")
    if _current(config) != record["written"].encode("utf-8"):
        return EDITED_EXISTED if before is not None else EDITED_CREATED
    if before is None:
        Path(os.path.realpath(config)).unlink()  # through a symlink: the file install made
    else:
        write(config, base64.b64decode(before))
    return RESTORED


def _folders_record(config: Path) -> Path:
    return _record_path(config).with_suffix(".folders.json")


def remember_folders(config: Path, made: list[Path]) -> None:
    """Notes the folders an install made for `config` (`.claude/`, `.clinerules/hooks/`)."""
    if not made:
        return
    record = _folders_record(config)
    try:
        known = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = []
    folders = sorted({*map(str, known if isinstance(known, list) else []), *map(str, made)})
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(folders), encoding="utf-8")
    except OSError:
        pass  # an empty folder stays behind after uninstall: nothing else


def remove_made_folders(config: Path) -> None:
    """Removes the folders an install made for `config`, those left empty, deepest first:
    uninstall takes away exactly what install added."""
    record = _folders_record(config)
    try:
        folders = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for folder in sorted(map(str, folders), key=lambda f: f.count(os.sep), reverse=True):
        try:
            os.rmdir(folder)  # only an empty one: the user's files keep it
        except OSError:
            continue
    record.unlink(missing_ok=True)
