"""The one place a hook captures: today in this process, later through a running server.

`capture(cwd, params)` takes the `snapshot/capture` params of protocol.md and
returns its result (a Turn). The engine and pygit2 are imported here, lazily, so a
hook that does not capture never pays for them; routing the call to a daemon
changes this function only.
"""

from __future__ import annotations

from typing import Any


def capture(cwd: str, params: dict[str, Any]) -> dict[str, Any]:
    """Runs `snapshot/capture` with `params` on the work tree holding `cwd`."""
    from ..engine import Engine

    engine = Engine(cwd)
    return engine.capture(
        params.get("session"),
        params.get("label"),
        params.get("phase", "before"),
        params.get("metadata"),
        turn=params.get("turn"),
    )


def interrupt(cwd: str, session: str, turn: int | str, reason: str) -> bool:
    """Marks the hook's turn interrupted (sealed as the work tree is); False if nothing to do."""
    from ..engine import Engine
    from ..running import mark_interrupted

    return mark_interrupted(Engine(cwd), session, turn, reason)
