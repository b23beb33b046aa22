"""Where a hook keeps its log and its note of the turn it opened, found without pygit2.

Both live under the git directory (`<git dir>/turnback/`), found by walking up
from the hook's working directory the way git does (a `.git` directory, or a
`.git` file naming one, as in a linked worktree). Outside git they go to the
user's state directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.discovery import looked_in

#: The log is for people chasing a failure: keep it bounded.
_LOG_LIMIT = 1 << 20


def git_dir(start: str) -> Path | None:
    """The git directory of the work tree holding `start`, or None outside git."""
    return next((found for found, _tree in git_dirs_up(start)), None)


def git_dirs_up(start: str) -> Iterator[tuple[Path, Path]]:
    """The git directory and work tree of each repository holding `start`, nearest first
    (a nested repository, then the one around it), as far as git looks."""
    for folder in looked_in(Path(os.path.abspath(start))):
        dot_git = folder / ".git"
        try:
            if dot_git.is_dir():
                yield dot_git, folder
            elif dot_git.is_file():
                text = dot_git.read_text(encoding="utf-8", errors="replace").strip()
                if text.startswith("gitdir:"):
                    target = Path(text[len("gitdir:") :].strip())
                    yield (target if target.is_absolute() else (folder / target)), folder
        except OSError:
            return


def working_dir() -> str | None:
    """The process's working folder, or None when it was deleted under the hook."""
    try:
        return os.getcwd()
    except OSError:
        return None


def work_tree(start: str) -> Path:
    """The top of the work tree holding `start` (the folder itself outside git)."""
    here = Path(os.path.abspath(start))
    for folder in looked_in(here):
        if (folder / ".git").exists():
            return folder
    return here


def state_dir(cwd: str) -> Path:
    """`<git dir>/turnback`, else `$XDG_STATE_HOME/turnback` (~/.local/state/turnback)."""
    found = git_dir(cwd)
    if found is not None:
        return found / "turnback"
    return user_state_dir()


def log_path(cwd: str) -> Path:
    return state_dir(cwd) / "hook.log"


def log(cwd: str, message: str) -> Path | None:
    """Appends one timestamped line to the hook log; returns its path, or None if unwritable.
    Where `<git dir>/turnback` cannot be written, the user's state folder keeps it."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"{stamp} {message.rstrip()}\n"
    for path in _log_paths(cwd):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and path.stat().st_size > _LOG_LIMIT:
                os.replace(path, path.with_suffix(".log.1"))
            with open(path, "a", encoding="utf-8", errors="backslashreplace") as handle:
                handle.write(line)
            return path
        except OSError:
            continue
    return None


def written_log(cwd: str) -> Path | None:
    """The hook log that holds this work tree's lines: its own, else the user's, if any."""
    return next((p for p in _log_paths(cwd) if p.exists()), None)


def _log_paths(cwd: str) -> tuple[Path, Path]:
    """Where the hook log is kept: the work tree's, else (not writable) the user's."""
    return log_path(cwd), user_state_dir() / "hook.log"


def _note_name(session: str) -> str:
    return hashlib.sha256(session.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".json"


def _note_path(cwd: str, session: str) -> Path:
    return state_dir(cwd) / "hooks" / _note_name(session)


def claim_turn(cwd: str, session: str, harness_turn: str) -> bool:
    """Whether this is the first "before" hook for the harness's turn `harness_turn`: False
    for a second one (Codex runs the hooks of the user's and the project's config both, so
    each prompt opened two turns). Claimed by creating a file, which only one can."""
    stem = _note_name(session).removesuffix(".json")
    key = hashlib.sha256(harness_turn.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    folder = state_dir(cwd) / "hooks"
    claim = folder / f"{stem}.{key}.claim"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return not claim.exists()  # (a file where the folder goes: cannot tell, capture)
    except OSError:
        return True  # cannot tell: capture, as without a claim
    os.close(fd)
    for older in folder.glob(f"{stem}.*.claim"):
        if older != claim:
            older.unlink(missing_ok=True)
    return True


def user_state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "turnback"


def write_note(cwd: str, session: str, note: dict[str, Any]) -> None:
    """Records what the session's last "before" hook did (the turn it opened, or its error).

    The note goes to `<git dir>/turnback` and a copy to the user's state folder (there
    alone where the git dir cannot be written, the reason the capture failed, often): the
    "after" hook may run in another repository of the workspace than this one (the agent
    `cd`-ed out of it), and `find_note` takes the newest note it finds: its `seq` is one
    more than the newest this hook could find, never the clock's word alone."""
    found = find_note(cwd, session)
    seq = _seq(found[0]) + 1 if found is not None else 1  # the clock may step back
    fields = {"session": session, "cwd": cwd, "seq": seq, "writtenAt": time.time_ns()}
    text = json.dumps({**fields, **note})
    folders = [state_dir(cwd) / "hooks", user_state_dir() / "hooks"]
    for folder in dict.fromkeys(folders):
        path = folder / _note_name(session)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            # (A full disk, say.) The last prompt's note must not stay where `find_note`
            # looks: the "after" hook would seal that older turn with this one's changes.
            # Removing a file needs no space.
            for stale in (tmp, path):
                with contextlib.suppress(OSError):
                    stale.unlink(missing_ok=True)


def read_note(cwd: str, session: str) -> dict[str, Any] | None:
    """What the session's last "before" hook recorded, or None (no hook opened a turn)."""
    return _read_note(_note_path(cwd, session), session)


def _read_note(path: Path, session: str) -> dict[str, Any] | None:
    try:
        note = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return note if isinstance(note, dict) and note.get("session") == session else None


def find_note(cwd: str, session: str) -> tuple[dict[str, Any], str] | None:
    """The session's newest note and the folder its "before" hook ran in, among `cwd`'s
    work tree, the ones enclosing it, and the user's state directory. The nearest one
    alone was an older prompt's when the agent had moved between a repository and a
    nested one since, and the "after" hook then sealed that older turn with this one's
    changes."""
    places: dict[Path, str] = {}  # state folder -> the work tree it belongs to
    for found, tree in git_dirs_up(cwd):  # (one walk up: a hook deep in a tree pays once)
        places.setdefault(found / "turnback", str(tree))
    places.setdefault(user_state_dir(), cwd)
    newest: tuple[tuple[int, int], dict[str, Any], str] | None = None
    for where, found_from in places.items():
        note = _read_note(where / "hooks" / _note_name(session), session)
        if note is None:
            continue
        at = note.get("writtenAt")
        order = (_seq(note), at if isinstance(at, int) else 0)  # (0, 0): an older turnback's
        if newest is None or order > newest[0]:
            newest = (order, note, found_from)
    if newest is None:
        return None
    return newest[1], _opened_in(newest[1], newest[2])


def _seq(note: dict[str, Any]) -> int:
    seq = note.get("seq")
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else 0


def _opened_in(note: dict[str, Any], found_in: str) -> str:
    opened = note.get("cwd")
    return opened if isinstance(opened, str) and os.path.isdir(opened) else found_in
