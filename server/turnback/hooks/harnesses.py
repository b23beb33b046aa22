"""What each agent harness sends its hooks and what it expects back.

One row per harness: the events that open ("before") and seal ("after") a turn,
where its JSON keeps the session id, the prompt and the other ids, what its hook
must print on stdout (the harness reads it as JSON or shows it), and how a
warning reaches the user without reaching the model. Each row cites the
documentation it follows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

#: What a hook prints: given the warning to show (or None), the exact stdout text.
Output = Callable[[str | None], str]


def _silent(_warning: str | None) -> str:
    """Nothing on stdout, ever (the harness would hand it to the model)."""
    return ""


def _system_message(warning: str | None) -> str:
    """Nothing when all is well; else the documented `systemMessage` JSON shown to the user."""
    return json.dumps({"systemMessage": warning}) + "\n" if warning else ""


def _cursor_continue(_warning: str | None) -> str:
    """Cursor's beforeSubmitPrompt answer: always let the prompt through."""
    return json.dumps({"continue": True}) + "\n"


def _empty_object(_warning: str | None) -> str:
    return "{}\n"


def _cline_answer(_warning: str | None) -> str:
    """Cline's hook answer: never cancel, never add context for the model."""
    return json.dumps({"cancel": False}) + "\n"


@dataclass(frozen=True)
class Harness:
    """One agent harness's hook contract."""

    name: str
    title: str
    #: event name -> "before" | "after" | "interrupt" (the turn ended without "after")
    events: dict[str, str]
    #: keys tried in order for the conversation/session id
    session_keys: tuple[str, ...]
    #: path of keys to the prompt text, tried in order
    prompt_keys: tuple[tuple[str, ...], ...]
    #: payload key -> metadata key, copied when present
    id_keys: dict[str, str]
    #: event name -> what to print on stdout
    outputs: dict[str, Output]
    #: the documentation this row follows
    source: str
    aliases: tuple[str, ...] = ()
    #: keys tried in order for the working directory (a string, or a list of roots)
    cwd_keys: tuple[str, ...] = ("cwd",)
    #: events where a warning may be shown without reaching the model
    warn_events: tuple[str, ...] = field(default=())
    #: how a "before" event's prompt starts when the harness, not the user, sent it to go on
    #: with the last prompt's work (its turn goes on: the next "after" seals it again)
    continuations: tuple[str, ...] = field(default=())

    def phase(self, event: str) -> str | None:
        return self.events.get(event)

    def before_event(self) -> str:
        return next(e for e, p in self.events.items() if p == "before")

    def after_event(self) -> str:
        return next(e for e, p in self.events.items() if p == "after")


HARNESSES: dict[str, Harness] = {}


def _add(harness: Harness) -> None:
    HARNESSES[harness.name] = harness


# Claude Code: https://docs.claude.com/en/docs/claude-code/hooks
# UserPromptSubmit stdout is added to the model's context (checked with 2.1.328), so it
# prints nothing; Stop's JSON `systemMessage` is shown to the user, not the model.
_add(
    Harness(
        name="claude-code",
        title="Claude Code",
        aliases=("claude", "claudecode", "claude_code"),
        # StopFailure (the turn ended on an API error) and SessionEnd (the session closed)
        # end a turn that Stop never sealed: it is interrupted (running.py).
        events={
            "UserPromptSubmit": "before",
            "Stop": "after",
            "StopFailure": "interrupt",
            "SessionEnd": "interrupt",
        },
        session_keys=("session_id",),
        prompt_keys=(("prompt",),),
        id_keys={"prompt_id": "promptId", "transcript_path": "transcriptPath"},
        outputs={
            "UserPromptSubmit": _silent,
            "Stop": _system_message,
            "StopFailure": _silent,
            "SessionEnd": _silent,
        },
        warn_events=("Stop",),
        # A background subagent's report: Claude Code fires Stop when the main agent's reply
        # ends, then, once the subagent is done, a UserPromptSubmit carrying its report.
        continuations=("<task-notification>",),
        source="https://docs.claude.com/en/docs/claude-code/hooks",
    )
)

# Codex CLI: https://developers.openai.com/codex/hooks (codex-rs/hooks/schema in
# openai/codex). UserPromptSubmit plain stdout becomes a developer message, so it prints
# nothing; Stop stdout must be JSON, and its `systemMessage`
# (codex-rs/hooks/schema/generated/stop.command.output.schema.json) carries a warning.
_add(
    Harness(
        name="codex",
        title="Codex CLI",
        aliases=("codex-cli", "openai-codex"),
        events={"UserPromptSubmit": "before", "Stop": "after"},
        session_keys=("session_id",),
        prompt_keys=(("prompt",),),
        id_keys={"turn_id": "turnId", "transcript_path": "transcriptPath"},
        outputs={"UserPromptSubmit": _silent, "Stop": _system_message},
        warn_events=("Stop",),
        source="https://developers.openai.com/codex/hooks",
    )
)

# Gemini CLI: https://geminicli.com/docs/hooks/reference (docs/hooks/reference.md in
# google-gemini/gemini-cli). stdout must be only the final JSON; `systemMessage` is shown
# to the user; only BeforeAgent's hookSpecificOutput.additionalContext reaches the model.
_add(
    Harness(
        name="gemini",
        title="Gemini CLI",
        aliases=("gemini-cli", "geminicli"),
        events={"BeforeAgent": "before", "AfterAgent": "after"},
        session_keys=("session_id",),
        prompt_keys=(("prompt",),),
        id_keys={"transcript_path": "transcriptPath"},
        outputs={"BeforeAgent": _system_message, "AfterAgent": _system_message},
        warn_events=("BeforeAgent", "AfterAgent"),
        source="https://geminicli.com/docs/hooks/reference",
    )
)

# OpenCode: https://opencode.ai/docs/plugins. The plugin turnback installs
# (.opencode/plugins/turnback.js) sends its own JSON: {sessionID, messageID, prompt, cwd}
# from `chat.message` (before the model is called) and the `session.idle` event.
_add(
    Harness(
        name="opencode",
        title="OpenCode",
        aliases=("open-code", "opencode-ai"),
        events={"chat.message": "before", "session.idle": "after"},
        session_keys=("sessionID",),
        prompt_keys=(("prompt",),),
        id_keys={"messageID": "messageId"},
        outputs={"chat.message": _silent, "session.idle": _silent},
        source="https://opencode.ai/docs/plugins",
    )
)

# Cursor: https://cursor.com/docs/agent/hooks. `.cursor/hooks.json` (version 1);
# beforeSubmitPrompt gets {conversation_id, generation_id, prompt, workspace_roots, ...}
# and answers {"continue": true}; stop gets {status, loop_count} and may answer {}.
_add(
    Harness(
        name="cursor",
        title="Cursor",
        aliases=("cursor-agent",),
        events={"beforeSubmitPrompt": "before", "stop": "after"},
        session_keys=("conversation_id",),
        prompt_keys=(("prompt",),),
        id_keys={"generation_id": "generationId", "transcript_path": "transcriptPath"},
        outputs={"beforeSubmitPrompt": _cursor_continue, "stop": _empty_object},
        cwd_keys=("cwd", "workspace_roots"),
        source="https://cursor.com/docs/agent/hooks",
    )
)

# Cline: https://docs.cline.bot/features/hooks/hook-reference. An executable file per
# hook in `.clinerules/hooks/`; input {taskId, workspaceRoots, userPromptSubmit: {prompt}};
# answer {"cancel": false} (contextModification would reach the model: never sent).
_add(
    Harness(
        name="cline",
        title="Cline",
        events={"UserPromptSubmit": "before", "TaskComplete": "after"},
        session_keys=("taskId",),
        prompt_keys=(("userPromptSubmit", "prompt"), ("prompt",)),
        id_keys={},
        outputs={"UserPromptSubmit": _cline_answer, "TaskComplete": _cline_answer},
        cwd_keys=("cwd", "workspaceRoots"),
        source="https://docs.cline.bot/features/hooks/hook-reference",
    )
)

# Windsurf: https://docs.windsurf.com/windsurf/cascade/hooks. `.windsurf/hooks.json`;
# pre_user_prompt gets {trajectory_id, execution_id, tool_info: {user_prompt}};
# post_cascade_response ends the turn. Exit code decides; stdout is only shown with
# show_output, which turnback leaves off.
_add(
    Harness(
        name="windsurf",
        title="Windsurf",
        aliases=("cascade", "windsurf-cascade"),
        events={"pre_user_prompt": "before", "post_cascade_response": "after"},
        session_keys=("trajectory_id",),
        prompt_keys=(("tool_info", "user_prompt"), ("prompt",)),
        id_keys={"execution_id": "executionId"},
        outputs={"pre_user_prompt": _silent, "post_cascade_response": _silent},
        cwd_keys=("cwd",),
        source="https://docs.windsurf.com/windsurf/cascade/hooks",
    )
)

_ALIASES = {alias: h.name for h in HARNESSES.values() for alias in h.aliases}


def find_harness(name: str) -> Harness | None:
    """The harness called `name` or one of its aliases (case-insensitive)."""
    key = name.strip().lower()
    return HARNESSES.get(_ALIASES.get(key, key))
