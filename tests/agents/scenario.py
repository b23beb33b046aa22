"""The end-to-end scenario every agent plays: hooks installed by turnback, two prompts in one
conversation that write, edit, delete, rename and run a command, then list, undo and redo.

The test files in this folder call `run_two_turns` and `run_with_broken_storage` with their
agent's name; each returns what happened so the test asserts in its own words.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scripted_model import EditFile, ScriptedModel, Shell, Turn, WriteFile

from agents import Agent, make_agent
from helpers import git

TURNBACK = Path(sys.executable).parent / "turnback"

PROMPTS = ("Add a greeting module and tidy the readme", "Rename the old notes and list the sources")
IGNORED_BEFORE = {"build/cache.log": "an ignored file the agent never touches\n"}
#: Made by the second turn's shell command, ignored by .gitignore: undo must leave it alone.
IGNORED_BY_AGENT = "build/run.log"
START_FILES = {
    ".gitignore": "build/\n",
    "README.md": "# Demo\nhello world\n",
    "src/app.py": "print('v1')\n",
    "docs/old_notes.md": "notes\n",
    "obsolete.txt": "to be removed\n",
}
TURNS = [
    Turn(
        [
            WriteFile("src/greet.py", "def greet():\n    return 'hi'\n"),
            EditFile("README.md", "hello world", "hello agents"),
            Shell("rm obsolete.txt"),
        ],
        "Added the greeting.",
    ),
    Turn(
        [
            Shell("mv docs/old_notes.md docs/notes.md"),
            EditFile("src/app.py", "v1", "v2"),
            Shell(f"ls src > sources.txt && mkdir -p build && date > {IGNORED_BY_AGENT}"),
        ],
        "Renamed and listed.",
    ),
]
EXPECTED_AFTER = {
    "README.md": "# Demo\nhello agents\n",
    "src/app.py": "print('v2')\n",
    "src/greet.py": "def greet():\n    return 'hi'\n",
    "docs/notes.md": "notes\n",
    "sources.txt": "app.py\ngreet.py\n",
}
GONE_AFTER = ("obsolete.txt", "docs/old_notes.md")


def make_project(root: Path) -> None:
    """A real git repository with one commit and an ignored file."""
    root.mkdir(parents=True)
    for rel, content in {**START_FILES, **IGNORED_BEFORE}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(content)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "start")


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root outside .git, ignored ones included, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts[:1]
    }


def turnback(agent: Agent, *args: str) -> subprocess.CompletedProcess[str]:
    """The turnback command line in the project, with the agent's environment (its HOME)."""
    return subprocess.run(
        [str(TURNBACK), *args],
        cwd=agent.root,
        env=agent.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def turnback_json(agent: Agent, *args: str) -> dict[str, Any]:
    done = turnback(agent, *args, "--json")
    assert done.returncode == 0, f"turnback {' '.join(args)}: {done.stdout}{done.stderr}"
    return json.loads(done.stdout)


def install_hooks(agent: Agent) -> None:
    done = turnback(agent, "hooks", "install", agent.name)
    assert done.returncode == 0, f"hooks install {agent.name}: {done.stdout}{done.stderr}"


@dataclass
class Played:
    """What one scripted conversation left behind, for the test to check."""

    agent: Agent
    model: ScriptedModel
    runs: list[subprocess.CompletedProcess[str]]
    before: dict[str, bytes]
    after: dict[str, bytes]


def new_agent(name: str, base: Path) -> Agent:
    root, home = base / "project", base / "home"
    make_project(root)
    home.mkdir()
    return make_agent(name, root, home)


def play(
    agent: Agent,
    turns: list[Turn],
    prompts: tuple[str, ...],
    after_install: Callable[[Agent], None] | None = None,
) -> Played:
    """Installs turnback's hooks, then runs each prompt against a model playing `turns`."""
    with ScriptedModel(agent.wire(), turns) as model:
        agent.model_url = model.url
        agent.configure()
        install_hooks(agent)
        if after_install:
            after_install(agent)
        before = tree(agent.root)
        runs = [agent.run(prompt, first=index == 0) for index, prompt in enumerate(prompts)]
    return Played(agent, model, runs, before, tree(agent.root))


def run_two_turns(name: str, base: Path) -> Played:
    """The two-prompt conversation of the scenario, by agent `name` in a new project."""
    return play(new_agent(name, base), TURNS, PROMPTS)


def break_storage(agent: Agent) -> None:
    """A file where turnback's refs folder goes: every capture fails (its log still works)."""
    refs = agent.root / ".git" / "refs" / "turnback"
    if refs.is_dir():
        shutil.rmtree(refs)
    refs.write_text("not a folder\n")


def run_with_broken_storage(name: str, base: Path) -> Played:
    """The first prompt, after turnback's storage was made unusable."""
    return play(new_agent(name, base), TURNS[:1], PROMPTS[:1], after_install=break_storage)


def ignored_only(files: dict[str, bytes]) -> dict[str, bytes]:
    """The ignored files (everything under build/)."""
    return {k: v for k, v in files.items() if k.startswith("build/")}


def unignored_only(files: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if not k.startswith("build/")}
