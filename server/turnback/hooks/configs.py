"""Where each harness reads its hooks from, and the entries turnback adds there.

Three shapes: a JSON file with grouped command hooks (Claude Code, Codex, Gemini
CLI: `{"hooks": {EVENT: [{"hooks": [{"type": "command", "command": ...}]}]}}`), a
JSON file with flat command lists (Cursor, Windsurf: `{"hooks": {EVENT: [{"command":
...}]}}`), and files of their own (Cline's executable hook scripts, OpenCode's
plugin). Every command runs turnback by an absolute path, so a harness started
with another PATH still finds it.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .harnesses import HARNESSES, Harness

#: The first line of every file turnback writes (how uninstall knows its own files).
MARKER = "turnback: installed by `turnback hooks install"


def turnback_argv() -> list[str]:
    """How to run this turnback from anywhere: its script beside this Python, else `-m`."""
    script = Path(sys.executable).parent / "turnback"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "turnback"]


def hook_command(harness: Harness, event: str) -> str:
    return shlex.join([*turnback_argv(), "hook", harness.name, event])


def is_our_command(command: Any, harness: Harness, event: str | None = None) -> bool:
    """Whether `command` is a `turnback hook` command for `harness` (and `event`)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) < 4 or words[-3:-1] != ["hook", harness.name]:
        return False
    if event is not None and words[-1] != event:
        return False
    return any("turnback" in word for word in words[:-3])


@dataclass(frozen=True)
class JsonTarget:
    """A JSON config whose `hooks` object maps each event to a list of entries."""

    path: Path
    #: "grouped" ({"hooks": [handler]} per entry) or "flat" (the handler is the entry)
    shape: str
    #: extra keys of each handler turnback writes (a timeout, a name)
    handler_extra: dict[str, Any] = field(default_factory=dict)
    #: top-level keys a new file needs (Cursor's "version")
    skeleton: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileTarget:
    """Files turnback owns outright (name -> text), each starting with MARKER."""

    files: dict[Path, str]
    executable: bool = False
    notes: tuple[str, ...] = ()


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or _home() / ".config")


_CODEX_TRUST = (
    "Codex runs a hook only after you trust it: open Codex in this folder, run /hooks and "
    "trust the two turnback hooks (trust is by content hash, so again after a reinstall).",
    "Project hooks (<repo>/.codex/hooks.json) load only in a trusted project: trust the "
    "folder when Codex asks, or add to $CODEX_HOME/config.toml (~/.codex/config.toml):\n"
    '    [projects."{root}"]\n    trust_level = "trusted"',
)


def _opencode_plugin(harness: Harness) -> str:
    argv = ", ".join(json.dumps(a) for a in (*turnback_argv(), "hook", harness.name))
    return _OPENCODE_TEMPLATE.replace("@MARKER@", f"{MARKER} opencode`").replace("@ARGV@", argv)


# OpenCode plugin API: https://opencode.ai/docs/plugins. `chat.message` is awaited before
# the model is called; only output.parts is read (writing there would change the prompt).
# `session.idle` is not awaited and `opencode run` exits right after it, so the seal runs
# detached, and `dispose` (awaited at shutdown) waits for it.
_OPENCODE_TEMPLATE = """// @MARKER@; `turnback hooks uninstall opencode` removes it.
import { spawn } from "node:child_process";

const TURNBACK = [@ARGV@];
const pending = new Set();

function hook(event, payload, cwd) {
  const done = new Promise((resolve) => {
    let child;
    try {
      child = spawn(TURNBACK[0], [...TURNBACK.slice(1), event], {
        cwd, detached: true, stdio: ["pipe", "ignore", "ignore"],
      });
    } catch (error) {
      resolve();
      return;
    }
    child.on("error", () => resolve());
    child.on("close", () => resolve());
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
  pending.add(done);
  done.finally(() => pending.delete(done));
  return done;
}

export const TurnbackPlugin = async ({ directory, client }) => {
  // A subagent (the task tool) runs in a child session: its work is the prompt's turn, not
  // one of its own, so its messages and its idle are the parent's business.
  const children = new Map();
  const isChild = (id) => {
    if (!children.has(id)) {
      children.set(id, (async () => {
        try {
          const found = await client.session.get({ path: { id } });
          return Boolean(found && found.data && found.data.parentID);
        } catch (error) {
          return false;
        }
      })());
    }
    return children.get(id);
  };
  return {
  "chat.message": async (input, output) => {
    if (await isChild(input.sessionID)) return;
    const parts = (output && output.parts) || [];
    const prompt = parts
      .filter((part) => part.type === "text" && !part.synthetic && typeof part.text === "string")
      .map((part) => part.text)
      .join("\\n");
    const messageID = input.messageID || (output && output.message && output.message.id);
    await hook("chat.message", {
      sessionID: input.sessionID, messageID, prompt, cwd: directory,
    }, directory);
  },
  event: async ({ event }) => {
    if (event && event.type === "session.idle" && event.properties) {
      const sessionID = event.properties.sessionID;
      if (await isChild(sessionID)) return;
      hook("session.idle", { sessionID, cwd: directory }, directory);
    }
  },
  dispose: async () => {
    await Promise.allSettled([...pending]);
  },
  };
};
"""


def _cline_script(harness: Harness, event: str) -> str:
    return (
        f"#!/bin/sh\n# {MARKER} cline`; `turnback hooks uninstall cline` removes it.\n"
        f"exec {hook_command(harness, event)}\n"
    )


def target(harness: Harness, root: Path, user: bool) -> JsonTarget | FileTarget:
    """Where `harness` keeps its hooks, at project scope (`root`) or the user's."""
    name = harness.name
    if name == "claude-code":
        base = _home() if user else root
        return JsonTarget(base / ".claude" / "settings.json", "grouped", {"timeout": 60})
    if name == "codex":
        codex_home = Path(os.environ.get("CODEX_HOME") or _home() / ".codex")
        path = codex_home / "hooks.json" if user else root / ".codex" / "hooks.json"
        notes = (
            (_CODEX_TRUST[0],)
            if user
            else tuple(n.replace("{root}", str(root)) for n in _CODEX_TRUST)
        )
        return JsonTarget(path, "grouped", {"timeout": 60}, notes=notes)
    if name == "gemini":
        base = _home() if user else root
        extra = {"name": "turnback", "timeout": 60000}  # Gemini's timeouts are milliseconds
        return JsonTarget(base / ".gemini" / "settings.json", "grouped", extra)
    if name == "cursor":
        base = _home() if user else root
        return JsonTarget(base / ".cursor" / "hooks.json", "flat", skeleton={"version": 1})
    if name == "windsurf":
        path = (
            _home() / ".codeium" / "windsurf" / "hooks.json"
            if user
            else root / ".windsurf" / "hooks.json"
        )
        return JsonTarget(path, "flat", {"show_output": False})
    if name == "cline":
        folder = (
            _home() / "Documents" / "Cline" / "Hooks" if user else root / ".clinerules" / "hooks"
        )
        return FileTarget(
            {folder / event: _cline_script(harness, event) for event in harness.events},
            executable=True,
            notes=("Cline runs hooks only when they are on: Cline settings > Enable Hooks.",),
        )
    if name == "opencode":
        folder = _config_home() / "opencode" / "plugins" if user else root / ".opencode" / "plugins"
        notes = (
            "OpenCode installs its plugin package on the first run after a plugin appears "
            "(once, up to a minute).",
        )
        return FileTarget({folder / "turnback.js": _opencode_plugin(harness)}, notes=notes)
    raise KeyError(name)


def all_harnesses() -> list[Harness]:
    return list(HARNESSES.values())
