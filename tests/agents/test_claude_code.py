"""Claude Code (npm @anthropic-ai/claude-code 2.1.328), offline against a scripted Messages API
server: `turnback hooks install claude-code`, then a real two-prompt conversation."""

from __future__ import annotations

from pathlib import Path

import pytest
from checks import (
    check_conversation,
    check_model_never_saw_turnback,
    check_not_blocked,
    check_undo_redo,
)
from scenario import run_two_turns, run_with_broken_storage

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
