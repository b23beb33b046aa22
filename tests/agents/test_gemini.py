"""Gemini CLI (npm @google/gemini-cli 0.61.0), offline against a scripted Gemini API
server: `turnback hooks install gemini`, then a real two-prompt conversation (-p, --resume)."""

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
AGENT = "gemini"


# Proves two prompts give two sealed turns labelled with them, undo twice
# restores the tree (ignored files untouched), redo returns, and the model never saw turnback.
def test_gemini_two_prompts_undo_redo(tmp_path: Path):
    played = run_two_turns(AGENT, tmp_path)
    listing = check_conversation(played)
    check_model_never_saw_turnback(played, listing)
    check_undo_redo(played)


# Proves a failing turnback (its storage a file, not a folder) never blocks a prompt.
def test_gemini_prompt_runs_with_broken_storage(tmp_path: Path):
    check_not_blocked(run_with_broken_storage(AGENT, tmp_path))
