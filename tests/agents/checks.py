"""What every agent's end-to-end test checks after playing the scenario (scenario.py)."""

from __future__ import annotations

import json
from typing import Any

from scenario import (
    EXPECTED_AFTER,
    GONE_AFTER,
    IGNORED_BEFORE,
    IGNORED_BY_AGENT,
    PROMPTS,
    TURNS,
    Played,
    ignored_only,
    tree,
    turnback_json,
    unignored_only,
)


def _hook_complaints(output: str) -> list[str]:
    """What an agent prints when a hook misbehaves (Codex `hook: Stop Failed`, Gemini CLI
    `Hook system message: ...` for stray stdout, errors and warnings naming a hook)."""
    signs = ("failed", "error", "system message", "blocked")
    return [
        line
        for line in output.splitlines()
        if "hook" in line.lower() and any(sign in line.lower() for sign in signs)
    ]


def _ran(played: Played, *, quiet_hooks: bool = True) -> None:
    """Each prompt completed: exit 0, the model's final text printed, every answer served,
    and (unless turnback was meant to fail) no complaint from the agent about a hook."""
    for run, turn in zip(played.runs, TURNS, strict=False):
        assert run.returncode == 0, f"{played.agent.name} failed: {run.stdout}\n{run.stderr}"
        assert turn.final_text in run.stdout, run.stdout
        if quiet_hooks:
            assert not _hook_complaints(run.stdout + run.stderr)
    assert played.model.answered_all, [r.path for r in played.model.requests]


def _request_text(played: Played) -> str:
    """What the model was sent, lower case, less the agent's own install folder (Gemini CLI
    sends the paths of its built-in skills, under the cache folder named turnback-agents)."""
    text = played.model.all_request_text()
    for form in (str(played.agent.install_dir), json.dumps(str(played.agent.install_dir))[1:-1]):
        text = text.replace(form, "")
    return text.lower()


def check_conversation(played: Played) -> dict[str, Any]:
    """Both prompts ran their tools for real and turnback sealed two turns in one session,
    labelled with the prompts; returns the listing."""
    _ran(played)
    after = played.after
    for rel, content in EXPECTED_AFTER.items():
        assert after.get(rel) == content.encode(), (rel, after.get(rel))
    assert not [rel for rel in GONE_AFTER if rel in after]
    assert IGNORED_BY_AGENT in after
    listing = turnback_json(played.agent, "list")
    turns = listing["turns"]
    assert [t["label"] for t in turns] == list(reversed(PROMPTS)), turns
    assert all(t["sealed"] and t["state"] == "active" for t in turns), turns
    assert {t["session"] for t in turns} == {listing["session"]}
    assert listing["session"] != "default", listing["session"]
    return listing


def check_undo_redo(played: Played) -> None:
    """Undo twice gives back the tree the conversation started from, ignored files untouched
    (the one the agent made stays); redo brings the conversation's work back."""
    agent = played.agent
    for _ in range(2):
        undone = turnback_json(agent, "undo")
        assert undone["turnsUndone"] == 1, undone
    now = tree(agent.root)
    assert unignored_only(now) == unignored_only(played.before)
    assert ignored_only(now) == ignored_only(played.after)
    for rel, content in IGNORED_BEFORE.items():
        assert now[rel] == content.encode()
    redone = turnback_json(agent, "redo", "-n", "2")
    assert redone["turnsRedone"] == 2, redone
    assert tree(agent.root) == played.after


def check_model_never_saw_turnback(played: Played, listing: dict[str, Any]) -> None:
    """Nothing turnback printed reached the model: no mention of turnback, no turn id."""
    printed = ["turnback", "refs/turnback"] + [t["id"] for t in listing["turns"]]
    text = _request_text(played)
    leaked = [word for word in printed if word.lower() in text]
    assert not leaked, f"the model was sent {leaked}"


def check_not_blocked(played: Played) -> None:
    """With turnback's storage broken the prompt still ran to its end, its work done, and
    the model heard nothing of the failure."""
    _ran(played, quiet_hooks=False)
    assert played.after.get("src/greet.py") == EXPECTED_AFTER["src/greet.py"].encode()
    assert "obsolete.txt" not in played.after
    log = played.agent.root / ".git" / "turnback" / "hook.log"
    assert log.exists() and log.read_text().strip(), "the hook never ran, or did not fail"
    text = _request_text(played)
    assert "turnback" not in text and "not a folder" not in text
