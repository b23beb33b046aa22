"""The four streamed wire formats the agents speak, and each agent's own tool names.

Each class answers the agent loop's requests with one tool call (in that agent's tool names and
argument shapes) or a final text, as server-sent events, and answers side requests (titles,
checks) with a short text. Facts: /work/shared/notes/agent-harnesses.md, and the requests
each agent was seen to send.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from scripted_model import EditFile, Shell, Task, ToolStep, WriteFile, sse

#: A side request's text; it is also valid JSON for the checks some agents run on the side.
SIDE_TEXT = json.dumps(
    {
        "reasoning": "ok",
        "next_speaker": "user",  # Gemini CLI's next-speaker check
        "model_choice": "flash",
        "complexity_reasoning": "ok",  # Gemini CLI's model router
        "complexity_score": 10,
    }
)


def as_shell(step: ToolStep) -> str:
    """A POSIX shell command doing what `step` does, for agents driven through their shell."""
    if isinstance(step, Shell):
        return step.command
    if isinstance(step, WriteFile):
        parent = str(Path(step.path).parent)
        made = f"mkdir -p {shlex.quote(parent)} && " if parent != "." else ""
        return f"{made}printf %s {shlex.quote(step.content)} > {shlex.quote(step.path)}"
    if isinstance(step, Task):
        raise ValueError("a subagent is OpenCode's tool here (ChatCompletions)")
    program = (
        "import sys,pathlib;p=pathlib.Path(sys.argv[1]);"
        "p.write_text(p.read_text().replace(sys.argv[2],sys.argv[3],1))"
    )
    return shlex.join(["python3", "-c", program, step.path, step.old, step.new])


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value)


class AnthropicMessages:
    """Claude Code: `POST /v1/messages` streamed; tools Write, Read, Edit, Bash."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def is_agent_loop(self, path: str, body: dict[str, Any]) -> bool:
        return path.startswith("/v1/messages") and bool(body.get("tools")) and body.get("stream")

    def _calls(self, step: ToolStep) -> list[tuple[str, dict[str, Any]]]:
        if isinstance(step, WriteFile):
            return [("Write", {"file_path": str(self.root / step.path), "content": step.content})]
        if isinstance(step, EditFile):  # Edit refuses a file the conversation never read
            path = str(self.root / step.path)
            edit = {"file_path": path, "old_string": step.old, "new_string": step.new}
            return [("Read", {"file_path": path}), ("Edit", edit)]
        return [("Bash", {"command": step.command, "description": "run a command"})]

    def _message(self, blocks: list[bytes], stop_reason: str) -> list[bytes]:
        start = {
            "type": "message_start",
            "message": {
                "id": "msg_scripted",
                "type": "message",
                "role": "assistant",
                "model": "claude-scripted",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 1},
        }
        return [
            sse(start, "message_start"),
            *blocks,
            sse(delta, "message_delta"),
            sse({"type": "message_stop"}, "message_stop"),
        ]

    def tool_call(self, step: ToolStep, call_id: str, body: dict[str, Any]) -> list[bytes]:
        blocks: list[bytes] = []
        for index, (name, arguments) in enumerate(self._calls(step)):
            block = {
                "type": "tool_use",
                "id": f"toolu_{call_id}_{index}",
                "name": name,
                "input": {},
            }
            delta = {"type": "input_json_delta", "partial_json": _json(arguments)}
            blocks += [
                sse(
                    {"type": "content_block_start", "index": index, "content_block": block},
                    "content_block_start",
                ),
                sse(
                    {"type": "content_block_delta", "index": index, "delta": delta},
                    "content_block_delta",
                ),
                sse({"type": "content_block_stop", "index": index}, "content_block_stop"),
            ]
        return self._message(blocks, "tool_use")

    def final_text(self, text: str, body: dict[str, Any]) -> list[bytes]:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text}
        return self._message(
            [
                sse(
                    {"type": "content_block_start", "index": 0, "content_block": block},
                    "content_block_start",
                ),
                sse(
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                    "content_block_delta",
                ),
                sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
            ],
            "end_turn",
        )

    def side_answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
        if body.get("stream"):
            return "text/event-stream", b"".join(self.final_text(SIDE_TEXT, body))
        message = {
            "id": "msg_side",
            "type": "message",
            "role": "assistant",
            "model": "claude-scripted",
            "content": [{"type": "text", "text": SIDE_TEXT}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
        return "application/json", _json(message).encode()


class OpenAIResponses:
    """Codex CLI: `POST /v1/responses` streamed; every step through its `exec_command` tool."""

    def is_agent_loop(self, path: str, body: dict[str, Any]) -> bool:
        return path.rstrip("/").endswith("/responses")

    def _response(self, item: dict[str, Any]) -> list[bytes]:
        usage = {
            "input_tokens": 1,
            "input_tokens_details": None,
            "output_tokens": 1,
            "output_tokens_details": None,
            "total_tokens": 2,
        }
        return [
            sse({"type": "response.created", "response": {"id": "resp_scripted"}}),
            sse({"type": "response.output_item.added", "output_index": 0, "item": item}),
            sse({"type": "response.output_item.done", "output_index": 0, "item": item}),
            sse(
                {"type": "response.completed", "response": {"id": "resp_scripted", "usage": usage}}
            ),
        ]

    def tool_call(self, step: ToolStep, call_id: str, body: dict[str, Any]) -> list[bytes]:
        arguments = _json({"cmd": as_shell(step)})
        item = {
            "type": "function_call",
            "id": f"fc_{call_id}",
            "call_id": call_id,
            "name": "exec_command",
            "arguments": arguments,
        }
        return self._response(item)

    def final_text(self, text: str, body: dict[str, Any]) -> list[bytes]:
        item = {
            "type": "message",
            "role": "assistant",
            "id": "msg_scripted",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return self._response(item)

    def side_answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
        return "text/event-stream", b"".join(self.final_text(SIDE_TEXT, body))


class GeminiGenerate:
    """Gemini CLI: `:streamGenerateContent?alt=sse` with tools is the loop; write_file,
    replace and run_shell_command are its tools."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def is_agent_loop(self, path: str, body: dict[str, Any]) -> bool:
        return ":streamGenerateContent" in path and bool(body.get("tools"))

    def _candidate(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 1,
                "candidatesTokenCount": 1,
                "totalTokenCount": 2,
            },
        }

    def tool_call(self, step: ToolStep, call_id: str, body: dict[str, Any]) -> list[bytes]:
        if isinstance(step, WriteFile):
            name = "write_file"
            args: dict[str, Any] = {
                "file_path": str(self.root / step.path),
                "content": step.content,
            }
        elif isinstance(step, EditFile):
            name = "replace"
            args = {
                "file_path": str(self.root / step.path),
                "old_string": step.old,
                "new_string": step.new,
                "instruction": "edit the file",
            }
        else:
            name, args = "run_shell_command", {"command": step.command}
        return [sse(self._candidate([{"functionCall": {"name": name, "args": args}}]))]

    def final_text(self, text: str, body: dict[str, Any]) -> list[bytes]:
        return [sse(self._candidate([{"text": text}]))]

    def side_answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
        answer = self._candidate([{"text": SIDE_TEXT}])
        if ":streamGenerateContent" in path:
            return "text/event-stream", sse(answer)
        return "application/json", _json(answer).encode()


class ChatCompletions:
    """OpenCode (openai-compatible provider): streamed `/v1/chat/completions`; tools write and
    bash (edits go through bash: its edit tool refuses a file the session never read)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def is_agent_loop(self, path: str, body: dict[str, Any]) -> bool:
        return path.rstrip("/").endswith("/chat/completions") and bool(body.get("tools"))

    def _chunks(self, delta: dict[str, Any], finish: str) -> list[bytes]:
        def chunk(d: dict[str, Any], reason: str | None) -> dict[str, Any]:
            return {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "delta": d, "finish_reason": reason}],
            }

        usage = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        return [
            sse(chunk({"role": "assistant", **delta}, None)),
            sse(chunk({}, finish)),
            sse(usage),
            b"data: [DONE]\n\n",
        ]

    def tool_call(self, step: ToolStep, call_id: str, body: dict[str, Any]) -> list[bytes]:
        if isinstance(step, WriteFile):
            name = "write"
            args: dict[str, Any] = {"filePath": str(self.root / step.path), "content": step.content}
        elif isinstance(step, Task):
            name = "task"
            args = {"description": "a subtask", "prompt": step.prompt, "subagent_type": "general"}
        else:
            name, args = "bash", {"command": as_shell(step), "description": "run a command"}
        call = {
            "index": 0,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": _json(args)},
        }
        return self._chunks({"content": None, "tool_calls": [call]}, "tool_calls")

    def final_text(self, text: str, body: dict[str, Any]) -> list[bytes]:
        return self._chunks({"content": text}, "stop")

    def side_answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
        if body.get("stream"):
            return "text/event-stream", b"".join(self._chunks({"content": "Scripted"}, "stop"))
        answer = {
            "id": "chatcmpl-side",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Scripted"},
                }
            ],
        }
        return "application/json", _json(answer).encode()
