"""Writes the server's settings into every place that lists them, from `turnback.config`.

The server's `Settings` dataclass is the one source; this script derives protocol.md's
settings table, the extension's `contributes.configuration` entries and the extension's
list of keys it forwards to the server. `make test` runs it with `--check` (through
tests/unit/test_settings_contract.py), so the lists cannot drift.

Usage: python scripts/settings_contract.py [--check]
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from turnback.config import Settings, camel  # noqa: E402

PROTOCOL = ROOT / "protocol.md"
PACKAGE_JSON = ROOT / "client-vscode" / "package.json"
SETTINGS_TS = ROOT / "client-vscode" / "src" / "common" / "settings.ts"
TABLE_BEGIN = "<!-- settings table: written by scripts/settings_contract.py -->"
TABLE_END = "<!-- end of settings table -->"
KEYS_RE = re.compile(r"(export const SERVER_SETTING_KEYS = \[\n)(.*?)(\] as const;)", re.S)


def _fields() -> list[dataclasses.Field]:
    return list(dataclasses.fields(Settings))


def protocol_table() -> str:
    rows = ["| setting | type | default | meaning |", "|---|---|---|---|"]
    for f in _fields():
        meta = f.metadata
        rows.append(f"| `{camel(f.name)}` | {meta['kind']} | {meta['shown']} | {meta['doc']} |")
    return "\n".join([TABLE_BEGIN, *rows, TABLE_END])


def vscode_property(f: dataclasses.Field) -> dict[str, Any]:
    default = f.default
    prop: dict[str, Any]
    if isinstance(default, bool):
        prop = {"type": "boolean", "default": default}
    elif isinstance(default, int):
        prop = {"type": "integer", "minimum": 1, "default": default}
    elif isinstance(default, str):
        prop = {"type": "string", "enum": list(f.metadata["choices"]), "default": default}
    else:
        items = {"type": "string", "minLength": 1}
        prop = {"type": "array", "items": items, "default": list(default)}
    prop["markdownDescription"] = f.metadata["doc"]
    return prop


def package_json(text: str) -> str:
    data = json.loads(text)
    props: dict[str, Any] = data["contributes"]["configuration"]["properties"]
    server_keys = {f"turnback.{camel(f.name)}" for f in _fields()}
    kept = {key: value for key, value in props.items() if not _looks_like_server_key(key)}
    kept.update({f"turnback.{camel(f.name)}": vscode_property(f) for f in _fields()})
    assert server_keys <= kept.keys()
    data["contributes"]["configuration"]["properties"] = kept
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _looks_like_server_key(key: str) -> bool:
    """The extension's own keys are grouped (`turnback.server.path`); the server's are flat."""
    return key.startswith("turnback.") and "." not in key[len("turnback.") :]


def settings_ts(text: str) -> str:
    keys = "".join(f"    '{camel(f.name)}',\n" for f in _fields())
    return KEYS_RE.sub(lambda m: m.group(1) + keys + m.group(3), text, count=1)


def protocol_md(text: str) -> str:
    start, end = text.index(TABLE_BEGIN), text.index(TABLE_END) + len(TABLE_END)
    return text[:start] + protocol_table() + text[end:]


TARGETS = ((PROTOCOL, protocol_md), (PACKAGE_JSON, package_json), (SETTINGS_TS, settings_ts))


def stale_files() -> list[Path]:
    """The files whose list of settings differs from `Settings`."""
    return [path for path, render in TARGETS if render(path.read_text()) != path.read_text()]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = stale_files()
        for path in stale:
            print(f"{path.relative_to(ROOT)}: settings differ from turnback.config.Settings")
        if stale:
            print("run: python scripts/settings_contract.py")
        return 1 if stale else 0
    for path, render in TARGETS:
        path.write_text(render(path.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
