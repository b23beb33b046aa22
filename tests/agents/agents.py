"""The real agents, as installed by scripts/install-agents.sh, driven offline.

Each `Agent` knows its executable in the cache, the configuration that points it at a scripted
model server on 127.0.0.1 (written into a scratch HOME and the project), and how to run one
prompt non-interactively, new or continuing the conversation. Facts behind every flag and
variable: /work/shared/notes/agent-harnesses.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scripted_model import WireFormat
from wire_formats import AnthropicMessages, ChatCompletions, GeminiGenerate, OpenAIResponses

REPO = Path(__file__).resolve().parents[2]
INSTALLER = REPO / "scripts" / "install-agents.sh"
#: One prompt's time limit; a run normally takes a few seconds.
RUN_TIMEOUT_S = 180


def installed_agents() -> dict[str, tuple[Path, bool]]:
    """Each agent's command path and whether it is installed, from the installer's own list."""
    done = subprocess.run(
        ["sh", str(INSTALLER), "--print"], capture_output=True, text=True, check=True
    )
    found: dict[str, tuple[Path, bool]] = {}
    for line in done.stdout.splitlines():
        name, command, state = line.split()
        found[name] = (Path(command), state == "installed")
    return found


def require_agent(name: str) -> Path:
    """The agent's executable, or skip the test saying how to install it."""
    command, ready = installed_agents()[name]
    if not ready:
        pytest.skip(f"{name} is not installed: scripts/install-agents.sh installs it")
    return command


def _clean_env(home: Path) -> dict[str, str]:
    """No proxy, key or config of the machine leaks in; the agent writes only under `home`."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "TURNBACK_DATA_DIR")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        NO_COLOR="1",
        CI="1",
        # The hooks start a real `turnback daemon` (the path users get); let it go soon after.
        TURNBACK_DAEMON_IDLE_TIMEOUT="30",
    )
    return env


@dataclass
class Agent:
    """One agent binary bound to a project folder, a scratch HOME and a model server URL."""

    name: str  # turnback's harness name, as in `turnback hooks install NAME`
    command: Path
    root: Path
    home: Path
    model_url: str = ""

    @property
    def install_dir(self) -> Path:
        """The agent's own folder in the cache: <cache>/<name>-<version>."""
        return self.command.parents[2]

    def wire(self) -> WireFormat:
        raise NotImplementedError

    def configure(self) -> None:
        """Points the agent at `model_url`; called once the server runs."""

    def env(self) -> dict[str, str]:
        return _clean_env(self.home)

    def argv(self, prompt: str, first: bool) -> list[str]:
        raise NotImplementedError

    def run(self, prompt: str, first: bool) -> subprocess.CompletedProcess[str]:
        """One prompt, the first of a conversation or continuing the newest one."""
        return subprocess.run(
            [str(self.command), *self.argv(prompt, first)],
            cwd=self.root,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )


def _write_json(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2) + "\n")


class ClaudeCode(Agent):
    def wire(self) -> WireFormat:
        return AnthropicMessages(self.root)

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "ANTHROPIC_BASE_URL": self.model_url,
            "ANTHROPIC_API_KEY": "scripted-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",  # --dangerously-skip-permissions is refused as root without it
        }

    def argv(self, prompt: str, first: bool) -> list[str]:
        more = [] if first else ["--continue"]
        return ["-p", prompt, "--dangerously-skip-permissions", "--output-format", "json", *more]


class Codex(Agent):
    def wire(self) -> WireFormat:
        return OpenAIResponses()

    def configure(self) -> None:
        codex_home = self.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        config = codex_home / "config.toml"
        body = config.read_text() if config.exists() else ""
        provider = (
            'model = "scripted"\nmodel_provider = "local"\n'
            "[model_providers.local]\n"
            'name = "local"\n'
            f'base_url = "{self.model_url}/v1"\n'
            'env_key = "SCRIPTED_MODEL_KEY"\nwire_api = "responses"\n'
            # Project hooks (.codex/hooks.json) load only in a trusted project; the hooks
            # themselves run with --dangerously-bypass-hook-trust (else trusted in /hooks).
            f'[projects."{self.root}"]\ntrust_level = "trusted"\n'
        )
        config.write_text(provider + body)

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "CODEX_HOME": str(self.home / ".codex"),
            "SCRIPTED_MODEL_KEY": "scripted-key",
        }

    def argv(self, prompt: str, first: bool) -> list[str]:
        flags = [
            "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
        ]
        if first:
            return ["exec", *flags, prompt]
        return ["exec", "resume", "--last", *flags, prompt]


class Gemini(Agent):
    def wire(self) -> WireFormat:
        return GeminiGenerate(self.root)

    def configure(self) -> None:
        path = self.home / ".gemini" / "settings.json"
        settings = json.loads(path.read_text()) if path.exists() else {}
        security = settings.setdefault("security", {})
        security["auth"] = {"selectedType": "gemini-api-key"}
        security["folderTrust"] = {"enabled": False}  # else --yolo is overridden
        settings.setdefault("general", {})["disableAutoUpdate"] = True
        settings.setdefault("privacy", {})["usageStatisticsEnabled"] = False
        _write_json(path, settings)

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "GOOGLE_GEMINI_BASE_URL": self.model_url,
            "GEMINI_API_KEY": "scripted-key",
        }

    def argv(self, prompt: str, first: bool) -> list[str]:
        more = [] if first else ["--resume", "latest"]
        return ["-p", prompt, "--yolo", *more]


#: The .gitignore OpenCode 1.18.33 writes into .opencode when it installs a plugin's package.
OPENCODE_GITIGNORE = "node_modules\npackage.json\npackage-lock.json\nbun.lock\n.gitignore"


class OpenCode(Agent):
    def wire(self) -> WireFormat:
        return ChatCompletions(self.root)

    def configure(self) -> None:
        path = self.home / ".config" / "opencode" / "opencode.json"
        config = json.loads(path.read_text()) if path.exists() else {}
        config.update(
            provider={
                "local": {
                    "npm": "@ai-sdk/openai-compatible",
                    "options": {"baseURL": f"{self.model_url}/v1", "apiKey": "x"},
                    "models": {"m": {"tool_call": True}},
                }
            },
            model="local/m",
            autoupdate=False,
            share="disabled",
            permission={"edit": "allow", "bash": "allow"},
        )
        _write_json(path, config)

        self._preinstall_plugin_package()

    def _preinstall_plugin_package(self) -> None:
        """What OpenCode's first run with a plugin npm-installs into .opencode (8-50 s, from the
        registry), taken from the cache install-agents.sh fills, as its own run leaves it."""
        cached = self.install_dir / "plugin-deps"
        if not (cached / ".turnback-installed").exists():
            return  # OpenCode installs it itself on the first run
        target = self.root / ".opencode"
        target.mkdir(exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy2(cached / name, target / name)
        linked = subprocess.run(  # hard links: fast; another file system needs a copy
            ["cp", "-al", str(cached / "node_modules"), str(target)], capture_output=True
        )
        if linked.returncode != 0:
            shutil.rmtree(target / "node_modules", ignore_errors=True)
            shutil.copytree(cached / "node_modules", target / "node_modules", symlinks=True)
        (target / ".gitignore").write_text(OPENCODE_GITIGNORE)

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
        }

    def argv(self, prompt: str, first: bool) -> list[str]:
        more = [] if first else ["--continue"]
        return ["run", *more, *prompt.split()]


AGENT_CLASSES: dict[str, type[Agent]] = {
    "claude-code": ClaudeCode,
    "codex": Codex,
    "gemini": Gemini,
    "opencode": OpenCode,
}


def make_agent(name: str, root: Path, home: Path) -> Agent:
    """The installed agent `name` on `root`, or a skip saying what to install."""
    return AGENT_CLASSES[name](name, require_agent(name), root, home)
