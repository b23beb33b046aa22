"""OpenCode (npm opencode-ai 1.18.33), offline against a scripted Chat Completions
server: `turnback hooks install opencode` (its plugin), then a real two-prompt conversation."""

from __future__ import annotations

from pathlib import Path

import pytest
from checks import (
    check_conversation,
    check_model_never_saw_turnback,
    check_not_blocked,
    check_undo_redo,
)
from scenario import (
    new_agent,
    play,
    run_two_turns,
    run_with_broken_storage,
    tree,
    turnback,
    turnback_json,
)
from scripted_model import Reply, Task, Turn, WriteFile

from agents import Agent

pytestmark = pytest.mark.agents
AGENT = "opencode"


# Proves two prompts give two sealed turns labelled with them, undo twice
# restores the tree (ignored files untouched), redo returns, and the model never saw turnback.
def test_opencode_two_prompts_undo_redo(tmp_path: Path):
    played = run_two_turns(AGENT, tmp_path)
    listing = check_conversation(played)
    check_model_never_saw_turnback(played, listing)
    check_undo_redo(played)


# Proves a failing turnback (its storage a file, not a folder) never blocks a prompt.
def test_opencode_prompt_runs_with_broken_storage(tmp_path: Path):
    check_not_blocked(run_with_broken_storage(AGENT, tmp_path))


# Proves a prompt whose agent runs a subagent (the task tool: a child session with its own
# chat.message and session.idle) is one turn, labelled with the user's prompt, and one undo
# takes back the parent's and the subagent's files: the child session was a turnback
# session of its own, newest, so `turnback undo` took back the subagent's file alone.
def test_opencode_subagent_work_is_the_prompts_turn(tmp_path: Path):
    turn = Turn(
        [
            WriteFile("parent1.txt", "before the subagent\n"),
            Task("write the child file"),
            WriteFile("child.txt", "the subagent's\n"),  # the child session's answers
            Reply("Child done."),
            WriteFile("parent2.txt", "after the subagent\n"),
        ],
        "Parent done.",
    )
    played = play(new_agent(AGENT, tmp_path), [turn], ("do the parent work",))
    assert played.model.answered_all, [r.stdout + r.stderr for r in played.runs]
    listing = turnback_json(played.agent, "list")
    assert [t["label"] for t in listing["turns"]] == ["do the parent work"]
    assert [s["id"] for s in listing["sessions"]] == [listing["session"]]
    undone = turnback_json(played.agent, "undo")
    assert sorted(f["path"] for f in undone["files"]) == ["child.txt", "parent1.txt", "parent2.txt"]
    assert tree(played.agent.root) == played.before


# Proves turnback's plugin installed for the project and for the user (OpenCode loads both)
# opens one turn per prompt: each prompt opened two, one of them "interrupted", so an undo
# of two turns went back one prompt.
def test_opencode_installed_twice_one_turn_per_prompt(tmp_path: Path):
    two = [Turn([WriteFile("one.txt", "1\n")], "One."), Turn([WriteFile("two.txt", "2\n")], "Two.")]

    def also_for_the_user(agent: Agent) -> None:
        done = turnback(agent, "hooks", "install", AGENT, "--user")
        assert done.returncode == 0, done.stdout + done.stderr

    played = play(new_agent(AGENT, tmp_path), two, ("make one", "make two"), also_for_the_user)
    turns = turnback_json(played.agent, "list")["turns"]
    assert [(t["label"], t["progress"]) for t in turns] == [
        ("make two", "sealed"),
        ("make one", "sealed"),
    ]
