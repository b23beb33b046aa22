"""After an undo: how to roll the agent's conversation back to match the files.

turnback restores files; the agent still remembers the undone turns. Each harness
has its own way back, so the hint names it and the prompt to go back to (the
oldest undone turn's, from the metadata its hook stored).
"""

from __future__ import annotations

from ..results import AgentHint, RestoreResult, Turn
from .harnesses import find_harness

# The conversation-only way back in each harness, and where its documentation says so.
_HOW: dict[str, str] = {
    # https://docs.claude.com/en/docs/claude-code/checkpointing
    "claude-code": (
        'In Claude Code, run /rewind (or press Esc twice), pick the prompt "{prompt}" and '
        'choose "Restore conversation" (turnback already restored the files).'
    ),
    # https://developers.openai.com/codex/cli (Esc Esc: edit a previous message)
    "codex": (
        'In Codex, press Esc twice and step back to the prompt "{prompt}" to edit or '
        "resend it (turnback already restored the files)."
    ),
    # https://geminicli.com/docs/cli/rewind
    "gemini": (
        'In Gemini CLI, run /rewind (or press Esc twice), pick the prompt "{prompt}" and '
        'choose "Rewind conversation" (turnback already restored the files).'
    ),
    # https://opencode.ai/docs/tui (/undo removes the last message)
    "opencode": (
        'In OpenCode, run /undo once per undone turn, back to the prompt "{prompt}" '
        "(turnback already restored the files)."
    ),
    # https://cursor.com/docs/agent/chat/checkpoints
    "cursor": (
        'In Cursor, go back to the message "{prompt}" in the chat and edit or resend it '
        "(turnback already restored the files)."
    ),
    # https://docs.cline.bot/features/checkpoints
    "cline": (
        'In Cline, on the message "{prompt}", use the checkpoint\'s "Restore Task Only" '
        "(turnback already restored the files)."
    ),
    # https://docs.windsurf.com/windsurf/cascade/cascade (revert to a step)
    "windsurf": (
        'In Windsurf, go back to the prompt "{prompt}" in Cascade and edit or resend it '
        "(turnback already restored the files)."
    ),
}


def agent_hint(turns: list[Turn]) -> AgentHint | None:
    """The hint for undone `turns` (newest first), from the oldest one a harness recorded."""
    for turn in reversed(turns):
        metadata = turn.metadata
        if not isinstance(metadata, dict) or not isinstance(metadata.get("harness"), str):
            continue
        harness = find_harness(metadata["harness"])
        if harness is None:
            continue
        prompt = metadata.get("prompt") or turn.label or ""
        session_id = metadata.get("sessionId")
        return AgentHint(
            harness=harness.name,
            prompt=prompt,
            message=_HOW[harness.name].format(prompt=prompt),
            session_id=session_id if isinstance(session_id, str) else None,
        )
    return None


def add_agent_hint(result: RestoreResult) -> RestoreResult:
    """Adds `agent_hint` to an undo result whose turns came from a harness's hooks."""
    if result.dry_run or not result.count:
        return result
    result.agent_hint = agent_hint(result.turns)
    return result
