"""`turnback hooks install|uninstall|status`: merge turnback's hooks into a harness's config.

Install keeps every key the user had and only adds (or refreshes) turnback's own
entries; installing twice changes nothing; uninstall removes exactly turnback's
entries (found by their `turnback hook <harness> <event>` command, or by the
marker line of a file turnback wrote). A config that does not parse is reported
and never written.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.ownership import give_like, give_new
from . import originals
from .configs import MARKER, FileTarget, JsonTarget, hook_command, is_our_command, target
from .harnesses import HARNESSES, Harness


class ConfigError(Exception):
    """A config file turnback must not touch (unparsable, or not turnback's)."""


@dataclass
class Report:
    """What an install or uninstall did, for people."""

    ok: bool = True
    changed: bool = False
    lines: list[str] = field(default_factory=list)


# ---- JSON configs --------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any] | None:
    """The config at `path` (None when absent); ConfigError when it is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read it ({error})") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text, parse_float=_finite, parse_constant=_not_json)
    except ValueError as error:
        raise ConfigError(f"{path}: not valid JSON ({error}); left unchanged") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a JSON object; left unchanged")
    hooks = data.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise ConfigError(f'{path}: "hooks" is not an object; left unchanged')
    for event, entries in (hooks or {}).items():
        if not isinstance(entries, list):
            raise ConfigError(f'{path}: "hooks.{event}" is not a list; left unchanged')
    return data


def _finite(text: str) -> float:
    """A JSON number Python can write back as it was read (1e400 would come back as
    `Infinity`, which no harness's JSON parser reads)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is too large to write back unchanged")
    return value


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _write_atomic(path: Path, text: str | bytes, mode: int | None = None) -> list[Path]:
    """Replaces the file `path` names, through a symlink (a config kept with the user's
    dotfiles stays a link to them)."""
    path = Path(os.path.realpath(path))
    made = _make_folders(path.parent)
    old = path.stat() if path.exists() else None
    old_mode = old.st_mode & 0o7777 if old is not None else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8") if isinstance(text, str) else text)
        os.chmod(tmp, mode if mode is not None else (old_mode if old_mode is not None else 0o644))
        # Run as root (`sudo`, a dev container), the user's file stays the user's.
        if old is not None:
            give_like(tmp, old)
        else:
            give_new(tmp, path.parent)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return made


def _make_folders(folder: Path) -> list[Path]:
    """`folder` and any missing parent, each its parent's owner's when run as root; returns
    the folders it made (uninstall removes them again once empty)."""
    if folder.is_dir():
        return []
    made = _make_folders(folder.parent)
    folder.mkdir(exist_ok=True)
    give_new(folder, folder.parent)
    return [*made, folder]


def _handlers(entry: Any, shape: str) -> list[Any]:
    if shape == "flat":
        return [entry]
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return hooks if isinstance(hooks, list) else []


def _is_our_handler(handler: Any, harness: Harness, event: str) -> bool:
    return isinstance(handler, dict) and is_our_command(handler.get("command"), harness, event)


def _is_ours(entry: Any, shape: str, harness: Harness, event: str) -> bool:
    """Whether the entry runs turnback's hook (beside the user's own commands, in a group
    edited by hand: a second turnback entry would open two turns per prompt)."""
    return any(_is_our_handler(h, harness, event) for h in _handlers(entry, shape))


def _entry(spec: JsonTarget, harness: Harness, event: str) -> dict[str, Any]:
    handler: dict[str, Any] = {"command": hook_command(harness, event), **spec.handler_extra}
    if spec.shape == "flat":
        return handler
    return {"hooks": [{"type": "command", **handler}]}


def _merged(data: dict[str, Any], spec: JsonTarget, harness: Harness) -> dict[str, Any]:
    """`data` with turnback's entry for each event: kept if current, else refreshed or added."""
    result = json.loads(json.dumps(data))
    for key, value in spec.skeleton.items():
        result.setdefault(key, value)
    hooks = result.setdefault("hooks", {})
    for event in harness.events:
        wanted = _entry(spec, harness, event)
        entries = hooks.setdefault(event, [])
        ours = [i for i, e in enumerate(entries) if _is_ours(e, spec.shape, harness, event)]
        if ours:
            entries[ours[0]] = _with_handler(entries[ours[0]], wanted, spec.shape, harness, event)
            for index in reversed(ours[1:]):
                rest = _stripped(entries[index], spec.shape, harness, event)
                if rest is None:
                    del entries[index]
                else:
                    entries[index] = rest
        else:
            entries.append(wanted)
    return result


def _with_handler(entry: Any, wanted: Any, shape: str, harness: Harness, event: str) -> Any:
    """`entry` with turnback's handler made current, where its first one stood; the
    user's own handlers in the same group are kept."""
    if shape == "flat":
        return wanted
    handlers, placed = [], False
    for handler in _handlers(entry, shape):
        if _is_our_handler(handler, harness, event):
            if not placed:
                handlers.append(wanted["hooks"][0])
                placed = True
        else:
            handlers.append(handler)
    return {**entry, "hooks": handlers}


def _stripped(entry: Any, shape: str, harness: Harness, event: str) -> Any:
    """`entry` without turnback's handlers (as it is when it has none); None when nothing
    else was in it."""
    if not _is_ours(entry, shape, harness, event):
        return entry
    if shape == "flat":
        return None
    handlers = [h for h in _handlers(entry, shape) if not _is_our_handler(h, harness, event)]
    return {**entry, "hooks": handlers} if handlers else None


def _without(data: dict[str, Any], spec: JsonTarget, harness: Harness) -> dict[str, Any]:
    """`data` with turnback's entries gone (and the containers only they filled)."""
    result = json.loads(json.dumps(data))
    hooks = result.get("hooks")
    if not isinstance(hooks, dict):
        return result
    for event in harness.events:
        entries = hooks.get(event)
        if not isinstance(entries, list):
            continue
        if not any(_is_ours(e, spec.shape, harness, event) for e in entries):
            continue
        stripped = (_stripped(entry, spec.shape, harness, event) for entry in entries)
        kept = [entry for entry in stripped if entry is not None]
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
            if not hooks:
                del result["hooks"]
    return result


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _json_state(spec: JsonTarget, harness: Harness) -> str:
    data = _load(spec.path)
    if data is None:
        return "not installed"
    found = [
        event
        for event in harness.events
        if any(
            _is_ours(e, spec.shape, harness, event)
            for e in (data.get("hooks") or {}).get(event, [])
        )
    ]
    if not found:
        return "not installed"
    if len(found) < len(harness.events):
        return f"partly installed ({', '.join(found)})"
    current = _merged(data, spec, harness) == data
    return "installed" if current else "installed (another turnback path; reinstall to update)"


def _install_json(spec: JsonTarget, harness: Harness, report: Report) -> None:
    data = _load(spec.path)
    merged = _merged(data or {}, spec, harness)
    if data is not None and merged == data:
        report.lines.append(f"{spec.path}: already installed, unchanged")
        return
    before = spec.path.read_bytes() if data is not None else None
    text = _dump(merged)
    made = _write_atomic(spec.path, text)
    had_ours = data is not None and _without(data, spec, harness) != data
    originals.remember(spec.path, before, text, had_ours)
    originals.remember_folders(spec.path, made)
    report.changed = True
    report.lines.append(f"{spec.path}: added turnback hooks ({', '.join(harness.events)})")


def _uninstall_json(spec: JsonTarget, harness: Harness, report: Report) -> None:
    data = _load(spec.path)
    if data is None:
        report.lines.append(f"{spec.path}: no such file, nothing to remove")
        return
    remaining = _without(data, spec, harness)
    if remaining == data:
        report.lines.append(f"{spec.path}: no turnback hooks, unchanged")
        return
    report.changed = True
    found = originals.restore(spec.path, _write_atomic)
    if found == originals.RESTORED:
        report.lines.append(f"{spec.path}: put back as it was before install")
        originals.remove_made_folders(spec.path)
        return
    if remaining in ({}, spec.skeleton) and found != originals.EDITED_EXISTED:
        Path(os.path.realpath(spec.path)).unlink()  # a symlinked config stays a symlink
        report.lines.append(f"{spec.path}: removed (it held only turnback's hooks)")
        originals.remove_made_folders(spec.path)
        return
    _write_atomic(spec.path, _dump(remaining))
    report.lines.append(f"{spec.path}: removed turnback hooks")


# ---- files turnback owns -------------------------------------------------------------------


def _is_our_file(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(400)
    except OSError:
        return False
    return MARKER in head


def _install_files(spec: FileTarget, report: Report) -> None:
    for path in spec.files:
        if path.exists() and not _is_our_file(path):
            raise ConfigError(f"{path}: exists and is not turnback's; left unchanged")
    for path, text in spec.files.items():
        try:
            current = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            current = None
        if current == text:
            report.lines.append(f"{path}: already installed, unchanged")
            continue
        made = _write_atomic(path, text, 0o755 if spec.executable else 0o644)
        originals.remember_folders(next(iter(spec.files)), made)
        report.changed = True
        report.lines.append(f"{path}: written")


def _uninstall_files(spec: FileTarget, report: Report) -> None:
    for path in spec.files:
        if not path.exists():
            report.lines.append(f"{path}: no such file, nothing to remove")
        elif not _is_our_file(path):
            report.lines.append(f"{path}: not turnback's, left alone")
        else:
            path.unlink()
            report.changed = True
            report.lines.append(f"{path}: removed")
    originals.remove_made_folders(next(iter(spec.files)))


def _files_state(spec: FileTarget) -> str:
    ours = [p for p in spec.files if p.exists() and _is_our_file(p)]
    if not ours:
        return "not installed"
    if len(ours) < len(spec.files):
        return "partly installed"
    current = all(
        p.read_text(encoding="utf-8", errors="replace") == t for p, t in spec.files.items()
    )
    return "installed" if current else "installed (another turnback path; reinstall to update)"


# ---- commands ------------------------------------------------------------------------------


def install(harness: Harness, root: Path, user: bool) -> Report:
    """Adds turnback's hooks for `harness` (project `root`, or the user's config)."""
    spec = target(harness, root, user)
    report = Report()
    try:
        if isinstance(spec, JsonTarget):
            _install_json(spec, harness, report)
        else:
            _install_files(spec, report)
    except (ConfigError, OSError) as error:
        return Report(ok=False, lines=[f"turnback: {error}"])
    report.lines.extend(spec.notes)
    return report


def uninstall(harness: Harness, root: Path, user: bool) -> Report:
    """Removes exactly the hooks `install` added for `harness`."""
    spec = target(harness, root, user)
    report = Report()
    try:
        if isinstance(spec, JsonTarget):
            _uninstall_json(spec, harness, report)
        else:
            _uninstall_files(spec, report)
    except (ConfigError, OSError) as error:
        return Report(ok=False, lines=[f"turnback: {error}"])
    return report


def status(root: Path) -> list[str]:
    """One line per harness and scope: installed, partly, not, or why it cannot tell."""
    lines = []
    for harness in HARNESSES.values():
        for user in (False, True):
            spec = target(harness, root, user)
            where = spec.path if isinstance(spec, JsonTarget) else next(iter(spec.files)).parent
            try:
                state = (
                    _json_state(spec, harness)
                    if isinstance(spec, JsonTarget)
                    else _files_state(spec)
                )
            except ConfigError as error:
                state = f"cannot tell: {error}"
            scope = "user" if user else "project"
            lines.append(f"{harness.name:<12} {scope:<8} {state}  ({where})")
    return lines
