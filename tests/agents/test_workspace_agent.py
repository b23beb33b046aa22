"""A real agent (Claude Code, offline against a scripted model) working in a plain folder
of two repositories: one prompt edits both and a loose file, and one `turnback undo`
puts all of it back (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario import play, turnback_json
from scripted_model import EditFile, Shell, Turn, WriteFile

from agents import make_agent
from helpers import git, tree_state
from helpers.workspace import repo_git_state, two_repo_folder

pytestmark = pytest.mark.agents


# Proves one agent turn across `api/`, `web/` and a loose file is one sealed turn naming
# both repositories (sealed although the agent's shell `cd`-ed into `api`), undone exactly
# (the agent's commit inside `api` left as it is and reported) and redone exactly.
def test_claude_code_turn_across_two_repositories(tmp_path: Path):
    root, home = two_repo_folder(tmp_path / "project"), tmp_path / "home"
    home.mkdir()
    agent = make_agent("claude-code", root, home)
    turn = Turn(
        [
            EditFile("api/main.py", "api v1", "api v2"),
            WriteFile("web/new.js", "export const made = 'by the agent';\n"),
            Shell("echo 'more notes' >> notes.md && cd api && git commit -qam 'agent commit'"),
        ],
        "Changed both services.",
    )
    (home / ".gitconfig").write_text("[user]\n\tname = agent\n\temail = agent@example.com\n")
    head_before = git(root / "api", "rev-parse", "HEAD").strip()
    played = play(agent, [turn], ("Change both services",))
    assert all(run.returncode == 0 for run in played.runs), played.runs[0].stderr
    git_dirs = ("api/.git/", "web/.git/")
    before = {p: v for p, v in played.before.items() if not p.startswith(git_dirs)}
    after_state, web_after = tree_state(root), repo_git_state(root / "web")
    assert (root / "api/main.py").read_text() == "api v2\n"
    assert git(root / "api", "rev-parse", "HEAD").strip() != head_before  # it committed

    listing = turnback_json(agent, "list")
    assert len(listing["turns"]) == 1 and listing["turns"][0]["sealed"]
    assert [r["path"] for r in listing["turns"][0]["repositories"]] == ["api", "web"]
    undone = turnback_json(agent, "undo")
    assert {f["path"] for f in undone["files"]} == {"api/main.py", "web/new.js", "notes.md"}
    assert [c["change"] for c in undone["repositoryChanges"]] == ["headMoved"]
    now = {p: v[1] for p, v in tree_state(root).items() if v[0] == "file"}
    assert {p: now.get(p) for p in before} == before
    assert "web/new.js" not in now
    assert git(root / "api", "rev-parse", "HEAD").strip() != head_before  # HEAD left alone
    turnback_json(agent, "redo")
    assert tree_state(root) == after_state
    assert repo_git_state(root / "web") == web_after
