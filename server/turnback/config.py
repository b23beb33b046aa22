"""Settings, fully defaulted, read from camelCase JSON with warnings for bad values.

A bad setting never stops the server: it is reported and its default is used.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

#: Untracked files above this size are not snapshotted (build artefacts, dumps, media).
DEFAULT_UNTRACKED_FILE_LIMIT = 10 * 1024 * 1024
#: An untracked directory with more files than this is a dependency or output tree, not work.
DEFAULT_UNTRACKED_DIR_LIMIT = 200
#: Untracked directories with these names hold dependencies, caches or build output.
DEFAULT_EXCLUDED_DIRS: tuple[str, ...] = (
    "node_modules",
    ".venv",
    "venv",
    "env",
    ".env",
    "dist",
    "build",
    "target",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".cache",
    ".tox",
)
#: Turns kept per session before the oldest are pruned: bounds what old snapshots keep alive.
DEFAULT_TURNS_PER_SESSION = 100
#: A snapshot holding more files than this is a mistake (a home directory, a disk root):
#: three times the largest repositories the benchmarks hold turnback to.
DEFAULT_SNAPSHOT_FILE_LIMIT = 1_000_000
#: New content one capture may write to the object database; beyond it, stop, don't fill the disk.
DEFAULT_CAPTURE_BYTE_LIMIT = 2 * 1024 * 1024 * 1024

#: Repositories one workspace captures (nested ones, submodules); the rest are reported.
DEFAULT_REPOSITORY_LIMIT = 50

#: Seconds without a change after which an unsealed agent turn counts as interrupted.
DEFAULT_TURN_QUIET_PERIOD = 120


def _setting(
    default: Any, kind: str, shown: str, doc: str, choices: tuple[str, ...] | None = None
) -> Any:
    """A setting's default and its documentation, the one source for every list of settings.

    `kind` and `shown` are protocol.md's type and default columns; `doc` is its meaning and
    the VS Code description. `scripts/settings_contract.py` writes both from here.
    """
    meta = {"kind": kind, "shown": shown, "doc": doc}
    if choices is not None:
        meta["choices"] = choices  # a string setting: one of these
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Settings:
    """What a user can tune; the wire names are the camelCase forms of these fields."""

    untracked_file_size_limit: int = _setting(
        DEFAULT_UNTRACKED_FILE_LIMIT,
        "integer ≥ 1 (bytes)",
        "10485760 (10 MiB)",
        "Untracked files larger than this many bytes are not snapshotted (and so never "
        "overwritten by undo).",
    )
    untracked_dir_file_limit: int = _setting(
        DEFAULT_UNTRACKED_DIR_LIMIT,
        "integer ≥ 1",
        "200",
        "Untracked directories holding more files than this are not snapshotted "
        "(dependency or output trees).",
    )
    excluded_directories: tuple[str, ...] = _setting(
        DEFAULT_EXCLUDED_DIRS,
        "[string]",
        ", ".join(f"`{name}`" for name in DEFAULT_EXCLUDED_DIRS),
        "Untracked directories with these names are not snapshotted (tracked files in "
        "them always are).",
    )
    turns_per_session: int = _setting(
        DEFAULT_TURNS_PER_SESSION,
        "integer ≥ 1",
        "100",
        "A new capture drops a session's oldest turns beyond this many.",
    )
    code_lens: bool = _setting(
        True,
        "boolean",
        "true",
        "Show code lenses (Agent turn N, Undo turn, Revert hunk, Show diff) on the hunks "
        "the newest agent turn changed.",
    )
    snapshot_file_limit: int = _setting(
        DEFAULT_SNAPSHOT_FILE_LIMIT,
        "integer ≥ 1",
        "1000000",
        "A capture whose snapshot would hold more files fails with `workspaceTooLarge` "
        "before writing anything (a home directory opened by mistake).",
    )
    capture_byte_limit: int = _setting(
        DEFAULT_CAPTURE_BYTE_LIMIT,
        "integer ≥ 1 (bytes)",
        "2147483648 (2 GiB)",
        "A capture that would write more new content fails with `workspaceTooLarge` "
        "before writing anything.",
    )
    turn_quiet_period: int = _setting(
        DEFAULT_TURN_QUIET_PERIOD,
        "integer ≥ 1 (seconds)",
        "120",
        "An agent turn that is not sealed counts as running (undo and redo refuse it "
        "without force) until its work tree has not changed for this many seconds; then "
        "it counts as interrupted.",
    )

    nested_repositories: str = _setting(
        "capture",
        '`"capture"` \\| `"report"`',
        '`"capture"`',
        "`capture`: a turn covers every repository below the workspace folder that is not "
        "ignored (nested repositories, submodules), undone and redone as one. `report`: "
        "they are left out and reported as `nestedRepository` / `submodule`.",
        choices=("capture", "report"),
    )
    repository_limit: int = _setting(
        DEFAULT_REPOSITORY_LIMIT,
        "integer ≥ 1",
        str(DEFAULT_REPOSITORY_LIMIT),
        "A workspace captures at most this many repositories below its folder; the rest "
        "are reported as `repositoryLimit` (never captured, never touched).",
    )

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


_FIELDS = {camel(f.name): f for f in dataclasses.fields(Settings)}


def _convert(name: str, value: Any, spec: dataclasses.Field) -> Any:
    """Returns the value as the field's type, or raises ValueError saying why not."""
    default = spec.default
    if isinstance(default, str):
        choices = spec.metadata["choices"]
        if isinstance(value, str) and value in choices:
            return value
        raise ValueError("expected one of " + ", ".join(f'"{c}"' for c in choices))
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise ValueError("expected true or false")
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        raise ValueError("expected an integer >= 1")
    if isinstance(default, tuple):
        if isinstance(value, list) and all(isinstance(v, str) and v for v in value):
            return tuple(value)
        raise ValueError("expected a list of non-empty strings")
    raise ValueError(f"unsupported setting {name}")  # pragma: no cover - a new field's type


def settings_from_json(data: Any) -> tuple[Settings, list[str]]:
    """Settings from a whole `turnback` JSON section (what it leaves out, or a value that
    is refused, keeps its default), and a warning per value that was ignored."""
    settings = Settings()
    if data is None:
        return settings, []
    if not isinstance(data, dict):
        return settings, [f"turnback settings must be an object, got {type(data).__name__}"]
    changes: dict[str, Any] = {}
    warnings: list[str] = []
    for key, value in data.items():
        spec = _FIELDS.get(key)
        if spec is None:
            continue  # an editor's own keys share the section (e.g. VS Code's server, trace)
        if value is None:
            continue
        try:
            changes[spec.name] = _convert(key, value, spec)
        except ValueError as why:
            # As the user wrote it (JSON: `true`, `["a", 5]`), not as Python prints it.
            shown = json.dumps(value, ensure_ascii=False, default=repr)
            warnings.append(f"Setting turnback.{key} = {shown} ignored ({why}); using default")
    return settings.replace(**changes), warnings


def settings_from_env(warn: Any) -> Settings | None:
    """Settings from `TURNBACK_SETTINGS` (the JSON an editor would send), each refused value
    passed to `warn`; None when the variable is not set."""
    import json
    import os

    raw = os.environ.get("TURNBACK_SETTINGS")
    if not raw:
        return None
    try:
        data = json.loads(raw)
    except ValueError:
        warn("TURNBACK_SETTINGS is not JSON; using the defaults")
        data = None
    settings, warnings = settings_from_json(data)
    for warning in warnings:
        warn(warning)
    return settings
