"""The scripted model server itself (no agent needed): script order, side requests, the record
of request bodies, and the pause step another issue's tests rely on."""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path

from scripted_model import Pause, ScriptedModel, Shell, Turn, WriteFile
from wire_formats import ChatCompletions

LOOP_BODY = {"stream": True, "tools": [{"type": "function"}], "messages": []}


def _post(model: ScriptedModel, body: dict) -> str:
    request = urllib.request.Request(
        f"{model.url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read().decode()


def _tool_name(stream: str) -> str | None:
    first = json.loads(stream.split("data: ", 2)[1])
    calls = first["choices"][0]["delta"].get("tool_calls")
    return calls[0]["function"]["name"] if calls else None


# Ensures loop requests get the script's steps in order, then the final text, while a side
# request (no tools) is answered aside and every body is recorded.
def test_script_order_and_record(tmp_path: Path):
    turns = [Turn([WriteFile("a.txt", "a"), Shell("rm a.txt")], "first done")]
    with ScriptedModel(ChatCompletions(tmp_path), turns) as model:
        assert _tool_name(_post(model, LOOP_BODY)) == "write"
        assert "Scripted" in _post(model, {"stream": True, "messages": []})
        second = _post(model, {**LOOP_BODY, "marker": "second"})
        assert _tool_name(second) == "bash" and "rm a.txt" in second
        assert not model.answered_all
        assert "first done" in _post(model, LOOP_BODY)
        assert model.answered_all
    assert [r.agent_loop for r in model.requests] == [True, False, True, True]
    assert model.requests[2].body["marker"] == "second"
    assert '"marker": "second"' in model.all_request_text()


# Ensures a pause holds the next answer until the test releases it, and says it was reached.
def test_pause_holds_the_answer(tmp_path: Path):
    pause = Pause()
    turns = [Turn([pause, Shell("true")], "after the pause")]
    with ScriptedModel(ChatCompletions(tmp_path), turns) as model:
        answers: list[str] = []
        waiting = threading.Thread(target=lambda: answers.append(_post(model, LOOP_BODY)))
        waiting.start()
        assert pause.reached.wait(30)
        waiting.join(0.5)
        assert waiting.is_alive() and not answers
        pause.release.set()
        waiting.join(30)
        assert _tool_name(answers[0]) == "bash"
