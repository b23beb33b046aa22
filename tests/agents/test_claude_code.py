"""Claude Code (npm @anthropic-ai/claude-code 2.1.328), offline against a scripted Messages API
server: `turnback hooks install claude-code`, then a real two-prompt conversation."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from checks import (
    check_conversation,
    check_model_never_saw_turnback,
    check_not_blocked,
    check_undo_redo,
)
from scenario import (
    PROMPTS,
    install_hooks,
    new_agent,
    run_two_turns,
    run_with_broken_storage,
    tree,
    turnback,
)
from scripted_model import EditFile, Pause, ScriptedModel, Turn, WriteFile

pytestmark = pytest.mark.agents
AGENT = "claude-code"


# Proves the "Done when": two prompts give two sealed turns labelled with them, undo twice
# restores the tree (ignored files untouched), redo returns, and the model never saw turnback.
def test_claude_code_two_prompts_undo_redo(tmp_path: Path):
    played = run_two_turns(AGENT, tmp_path)
    listing = check_conversation(played)
    check_model_never_saw_turnback(played, listing)
    check_undo_redo(played)


# Proves the hooks take the fast path users get: the first hook starts the work tree's daemon
# and later hooks' captures are answered by it (its log names each request it served).
def test_claude_code_hooks_reach_the_daemon(tmp_path: Path):
    played = run_two_turns(AGENT, tmp_path)
    log = played.agent.root / ".git" / "turnback" / "daemon" / "log"
    assert log.exists(), "no turnback daemon was started by the hooks"
    served = [line for line in log.read_text().splitlines() if "snapshot/capture from pid" in line]
    assert len(served) >= 2, log.read_text()


# Proves a failing turnback (its storage a file, not a folder) never blocks a prompt.
def test_claude_code_prompt_runs_with_broken_storage(tmp_path: Path):
    check_not_blocked(run_with_broken_storage(AGENT, tmp_path))


# Proves an undo never lands in the middle of a running turn: while the model pauses between
# two tool calls, `turnback undo` is refused and changes nothing; once the turn ends (Stop),
# the same undo gives back the tree exactly.
def test_claude_code_undo_refused_while_the_agent_runs(tmp_path: Path):
    agent = new_agent(AGENT, tmp_path)
    pause = Pause()
    script = [
        Turn(
            [
                WriteFile("src/greet.py", "def greet():\n    return 'hi'\n"),
                pause,
                EditFile("README.md", "hello world", "hello agents"),
            ]
        )
    ]
    with ScriptedModel(agent.wire(), script) as model:
        agent.model_url = model.url
        agent.configure()
        install_hooks(agent)
        before = tree(agent.root)
        runs: list = []
        running = threading.Thread(target=lambda: runs.append(agent.run(PROMPTS[0], first=True)))
        running.start()
        try:
            assert pause.reached.wait(120), "the agent never reached the pause"
            during = tree(agent.root)
            assert "src/greet.py" in during
            refused = turnback(agent, "undo")
            assert refused.returncode == 1, refused.stdout + refused.stderr
            assert "still running" in refused.stderr and "claude-code" in refused.stderr
            assert tree(agent.root) == during
        finally:
            pause.release.set()
            running.join(180)
    assert runs and runs[0].returncode == 0, runs
    assert tree(agent.root)["README.md"] == b"# Demo\nhello agents\n"
    undone = turnback(agent, "undo")
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert tree(agent.root) == before
