"""`turnback hook <harness> <event>`: one hook run, which never blocks or derails the agent.

Every path exits 0 (harnesses read exit 2 as "block the prompt" or "keep going").
stdout carries exactly what the harness expects (nothing, or its documented JSON);
a failure goes to `<git dir>/turnback/hook.log` and, where the harness has a
channel to the user that does not reach the model, to a one-line warning. The
work runs on a thread with a deadline, so a hook answers within the harness's
timeout even when the repository lock is held or the disk hangs.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import threading
from typing import IO, Any

from . import hookstate
from .capture import capture, interrupt
from .harnesses import Harness, find_harness
from .payload import HookCall, PayloadError, map_payload

#: Seconds a hook may take; under every harness's default hook timeout (Cline's 30 s is
#: the shortest documented) and the timeouts `turnback hooks install` writes.
DEFAULT_DEADLINE = 25.0
#: The longest `TURNBACK_HOOK_TIMEOUT` honoured (a thread join refuses `inf`).
MAX_DEADLINE = 3600.0


def _deadline() -> float:
    try:
        wanted = float(os.environ.get("TURNBACK_HOOK_TIMEOUT", DEFAULT_DEADLINE))
    except ValueError:
        return DEFAULT_DEADLINE
    return min(max(0.1, wanted), MAX_DEADLINE)  # nan: 0.1


def _here() -> str:
    """The hook's working folder for its log; the user's state folder's if it was deleted."""
    return hookstate.working_dir() or os.sep


def _describe(error: BaseException) -> str:
    message = getattr(error, "message", None) or str(error) or type(error).__name__
    return " ".join(str(message).split())


def _is_no_open_turn(error: BaseException) -> bool:
    from ..errors import Reason

    return getattr(error, "reason", None) is Reason.NO_OPEN_TURN


#: The metadata keys naming the prompt, per harness: a second "before" hook with the same
#: one is the same prompt's (Codex and OpenCode run the hooks of the user's config and the
#: project's both; Claude Code drops a duplicate command itself).
_PROMPT_KEYS = ("turnId", "messageId")


def _before(call: HookCall) -> str | None:
    if call.continuation:
        return None  # the harness going on with the last prompt: its turn goes on too
    harness_turn = next((call.metadata[k] for k in _PROMPT_KEYS if k in call.metadata), None)
    if harness_turn is not None and not hookstate.claim_turn(
        call.cwd, call.note_key, str(harness_turn)
    ):
        return None  # this turn's hook already ran (installed for the user and the project)
    # Until the turn is recorded, the note says so: an "after" then never seals an older turn.
    hookstate.write_note(
        call.cwd, call.note_key, {"error": UNFINISHED, "startedAt": _now_rfc3339()}
    )
    try:
        turn = capture(call.cwd, call.params())
    except Exception as error:
        where = hookstate.log(call.cwd, f"{call.session} before: {_describe(error)}")
        hookstate.write_note(call.cwd, call.note_key, {"error": _describe(error)})
        return f"turnback could not snapshot before this turn: {_describe(error)}" + (
            f" (log: {where})" if where else ""
        )
    opened = {"turn": turn["id"], "label": turn["label"], "cwd": call.cwd}
    hookstate.write_note(call.cwd, call.note_key, opened)
    return None


def _where_opened(call: HookCall) -> tuple[HookCall, dict[str, Any] | None]:
    """The call moved to the folder whose "before" hook opened the session's turn, with its
    note: an agent that `cd`-ed into a nested repository still seals the workspace's turn."""
    found = hookstate.find_note(call.cwd, call.note_key)
    if found is None:
        return call, None
    note, folder = found
    return dataclasses.replace(call, cwd=folder), note


def _after(call: HookCall) -> str | None:
    call, note = _where_opened(call)
    if note is None or note.get("handled"):
        return None  # no hook opened a turn in this session: nothing to seal
    if "turn" not in note and (late := _recorded_late(call, note)) is not None:
        note = {**note, "turn": late}  # the hook gave up, but the capture went on and ended
    if "turn" not in note:
        hookstate.write_note(call.cwd, call.note_key, {"handled": True})
        where = hookstate.written_log(call.cwd)
        return (
            "turnback did not record this turn (its snapshot before the turn failed: "
            f"{note.get('error', 'unknown error')}" + (f"; log: {where})" if where else ")")
        )
    try:
        capture(call.cwd, {**call.params(), "turn": note["turn"]})
    except Exception as error:
        if _is_no_open_turn(error):
            return None  # the hook's turn was undone meanwhile: nothing to seal
        where = hookstate.log(call.cwd, f"{call.session} after: {_describe(error)}")
        return f"turnback could not record the end of this turn: {_describe(error)}" + (
            f" (log: {where})" if where else ""
        )
    return None


#: The note a "before" hook leaves until its capture is recorded.
UNFINISHED = "the snapshot did not finish"


def _now_rfc3339() -> str:
    """history.timeline's `now_rfc3339`, written again: importing that module loads pygit2
    (~30 ms), which a hook the daemon answers never needs."""
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _recorded_late(call: HookCall, note: dict[str, Any]) -> str | None:
    """The turn a "before" hook that gave up at its deadline recorded all the same (its
    capture was already under way in the daemon, or in its own process past the point of
    no return): the session's newest turn, opened since that hook began and not sealed.
    Sealed now, it is this prompt's turn, not one "not recorded" and left running."""
    started = note.get("startedAt")
    if note.get("error") != UNFINISHED or not isinstance(started, str):
        return None
    from ..engine import Engine

    try:
        listed = Engine(call.cwd).list(call.session, limit=1)
    except Exception:
        return None
    newest = listed.turns[0] if listed.turns else None
    if newest is None or newest.sealed or newest.created_at < started:
        return None
    return newest.id


def _interrupt(call: HookCall, event: str) -> str | None:
    """The harness ended the turn without its "after" hook (an API error, the session closed)."""
    call, note = _where_opened(call)
    if note is None or note.get("handled") or "turn" not in note:
        return None  # no turn of this session to mark
    try:
        interrupt(call.cwd, call.session, note["turn"], event)
    except Exception as error:
        hookstate.log(call.cwd, f"{call.session} {event}: {_describe(error)}")
    return None


def _work(harness: Harness, event: str, raw: bytes, result: dict[str, Any]) -> None:
    """Maps the payload and captures; leaves the warning (or None) in `result`."""
    try:
        payload = json.loads(raw) if raw.strip() else None
    except (ValueError, RecursionError):  # (nested past Python's stack: no payload either)
        payload = None
    try:
        call = map_payload(harness, event, payload)
    except PayloadError as error:
        where = hookstate.log(_here(), f"{harness.name} {event}: {error}")
        result["warning"] = f"turnback ignored a hook call: {error}" + (
            f" (log: {where})" if where else ""
        )
        return
    result["cwd"] = call.cwd
    warnings = []
    for root_call in call.per_root():  # every root of a multi-root workspace, in order
        if call.phase == "interrupt":
            warnings.append(_interrupt(root_call, event))
        else:
            warnings.append(_before(root_call) if call.phase == "before" else _after(root_call))
    result["warning"] = "; ".join(w for w in warnings if w) or None


def _answer(harness: Harness, event: str, warning: str | None, out: IO[str]) -> None:
    output = harness.outputs.get(event)
    text = output(warning if event in harness.warn_events else None) if output else ""
    out.write(text)
    out.flush()


def run_hook(argv: list[str], stdin: IO[bytes] | None = None, out: IO[str] | None = None) -> int:
    """Runs `turnback hook HARNESS EVENT`; returns 0 on every path."""
    try:
        return _run_hook(argv, stdin or sys.stdin.buffer, out or sys.stdout)
    except BaseException as error:  # a bug here must not reach the agent either
        hookstate.log(_here(), f"turnback hook {' '.join(argv)}: internal error: {error!r}")
        return 0


def _run_hook(argv: list[str], stdin: IO[bytes], out: IO[str]) -> int:
    harness = find_harness(argv[0]) if argv else None
    if harness is None or len(argv) != 2 or harness.phase(argv[1]) is None:
        problem = f"turnback hook: unknown harness or event: {' '.join(argv) or '(none)'}"
        hookstate.log(_here(), problem)
        print(problem, file=sys.stderr)  # a broken config: no harness contract to keep
        return 0
    event = argv[1]
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            _work(harness, event, stdin.read(), result)
        except BaseException as error:  # a bug must not reach the agent either
            where = hookstate.log(_here(), f"{harness.name} {event}: internal error: {error!r}")
            result["warning"] = f"turnback hook failed: {_describe(error)} (log: {where})"

    def stopped(signum: int, _frame: object) -> None:
        # The agent's own timeout (SIGTERM), or Ctrl-C: said in the log the "after" hook's
        # warning names, then gone at once, as at the deadline (the worker may hold stdin).
        name = signal.Signals(signum).name
        hookstate.log(
            result.get("cwd") or _here(),
            f"{harness.name} {event}: stopped by {name} before it finished (a capture not "
            "recorded by then is not: a daemon still holding it drops it)",
        )
        os._exit(0)

    if threading.current_thread() is threading.main_thread():  # (only it may set them)
        for signum in (signal.SIGTERM, signal.SIGINT):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, stopped)
    worker = threading.Thread(target=work, name="turnback-hook", daemon=True)
    worker.start()
    worker.join(_deadline())
    if worker.is_alive():
        try:
            where = hookstate.log(
                result.get("cwd") or _here(),
                f"{harness.name} {event}: gave up after {_deadline():g} s (the capture was "
                "not recorded: a daemon still holding it drops it)",
            )
            _answer(harness, event, f"turnback timed out and skipped this turn (log: {where})", out)
        finally:
            # The worker may be stuck in I/O, even on stdin (whose lock would make the
            # interpreter's exit abort): leave now, and the repository lock dies with us.
            os._exit(0)
    _answer(harness, event, result.get("warning"), out)
    return 0
