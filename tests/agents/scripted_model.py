"""A scripted model server on 127.0.0.1: it plays a list of turns to a real agent.

A script is a list of turns; a turn is a list of steps (tool calls, pauses) and a final text.
Each agent-loop request gets the next step as one streamed tool call, then the turn's final
text. The wire format (Anthropic Messages, OpenAI Responses, Gemini, Chat Completions) is a
`WireFormat` from wire_formats.py; this module only keeps the script, the cursor and the record
of every request body, so a test can assert on what the model was sent.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

#: How long a pause waits for its release before answering anyway (a test never hangs).
PAUSE_LIMIT_S = 120.0


@dataclass(frozen=True)
class WriteFile:
    """The agent's file-writing tool creates or replaces `path` with `content`."""

    path: str
    content: str


@dataclass(frozen=True)
class EditFile:
    """The agent's editing tool replaces `old` by `new` in `path` (after reading it if needed)."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Shell:
    """The agent's shell tool runs `command` in the project folder (delete, rename, anything)."""

    command: str


@dataclass
class Pause:
    """The server stops before its next answer until `release` is set; `reached` says it did."""

    release: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Task:
    """The agent's subagent tool (OpenCode's `task`): a child session asks the model next."""

    prompt: str


@dataclass(frozen=True)
class Reply:
    """A text answer inside a turn: how a subagent's session ends, before the turn goes on."""

    text: str


ToolStep = WriteFile | EditFile | Shell | Task
Step = ToolStep | Pause | Reply


@dataclass
class Turn:
    """One prompt's worth of model answers: tool calls in order, then a final text."""

    steps: list[Step]
    final_text: str = "Done."


class WireFormat(Protocol):
    """How one API family is spoken: which requests are the agent loop, and how to answer."""

    def is_agent_loop(self, path: str, body: dict[str, Any]) -> bool: ...

    def tool_call(self, step: ToolStep, call_id: str, body: dict[str, Any]) -> list[bytes]: ...

    def final_text(self, text: str, body: dict[str, Any]) -> list[bytes]: ...

    def side_answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]: ...


@dataclass
class RecordedRequest:
    path: str
    body: dict[str, Any]
    raw: str
    agent_loop: bool


class ScriptedModel:
    """Serves `turns` in `wire` format on 127.0.0.1 at a random port, recording each request."""

    def __init__(self, wire: WireFormat, turns: list[Turn]) -> None:
        self.wire = wire
        self.requests: list[RecordedRequest] = []
        self._answers = self._flatten(turns)
        self._cursor = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @staticmethod
    def _flatten(turns: list[Turn]) -> list[list[Step | str]]:
        """Each answer: the pauses before it, then a tool step or the final text."""
        answers: list[list[Step | str]] = []
        for turn in turns:
            pending: list[Step | str] = []
            for step in turn.steps:
                pending.append(step)
                if not isinstance(step, Pause):
                    answers.append(pending)
                    pending = []
            answers.append([*pending, turn.final_text])
        return answers

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def answered_all(self) -> bool:
        return self._cursor == len(self._answers)

    def all_request_text(self) -> str:
        """Every request body as received, for 'the model never saw X' assertions."""
        return "\n".join(r.raw for r in self.requests)

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next_answer(self, body: dict[str, Any]) -> list[bytes]:
        with self._lock:
            if self._cursor >= len(self._answers):
                items: list[Step | str] = ["(the script has no more answers)"]
            else:
                items = self._answers[self._cursor]
            self._cursor += 1
            call_number = self._cursor
        for item in items:
            if isinstance(item, Pause):
                item.reached.set()
                item.release.wait(PAUSE_LIMIT_S)
            elif isinstance(item, str | Reply):
                return self.wire.final_text(item if isinstance(item, str) else item.text, body)
            else:
                return self.wire.tool_call(item, f"call_{call_number}", body)
        raise AssertionError("an answer always ends with a tool step or a text")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def do_GET(self) -> None:  # model lists and the like: an empty, valid answer
                self._send("application/json", b'{"data": [], "models": []}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8", "replace")
                try:
                    body = json.loads(raw) if raw else {}
                except json.JSONDecodeError:
                    body = {}
                loop = model.wire.is_agent_loop(self.path, body)
                model.requests.append(RecordedRequest(self.path, body, raw, loop))
                if not loop:
                    self._send(*model.wire.side_answer(self.path, body))
                    return
                self._stream(model._next_answer(body))

            def _send(self, content_type: str, payload: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, events: list[bytes]) -> None:
                payload = b"".join(events)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


def sse(data: dict[str, Any], event: str | None = None) -> bytes:
    """One server-sent event."""
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()
