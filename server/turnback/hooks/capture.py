"""The one place a hook captures: through the work tree's daemon, else in process.

`capture(cwd, params)` takes the `snapshot/capture` params of protocol.md and
returns its result (a Turn). `daemon.capture` asks a running `turnback daemon` first
(the watcher path: only what changed is looked at) and otherwise captures in this
process, importing the engine and pygit2 only then, and starts a daemon for the next
hook. Its errors carry `.data["reason"]` whichever way the capture went.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a hook's process milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any


def capture(cwd: str, params: dict[str, Any]) -> dict[str, Any]:
    """Runs `snapshot/capture` with `params` on the work tree holding `cwd`."""
    from ..daemon.capture import capture as capture_anywhere

    return capture_anywhere(
        cwd,
        params.get("session"),
        params.get("label"),
        params.get("phase", "before"),
        params.get("metadata"),
        turn=params.get("turn"),
    )


def interrupt(cwd: str, session: str, turn: int | str, reason: str) -> bool:
    """Marks the hook's turn interrupted (sealed as the work tree is); False if nothing to do."""
    from ..engine import Engine
    from ..history.running import mark_interrupted

    return mark_interrupted(Engine(cwd), session, turn, reason)
