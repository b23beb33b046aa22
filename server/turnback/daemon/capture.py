"""A capture as a hook wants it: the daemon's when one answers, else in process.

The one function the CLI's `capture` and `turnback hook` call. Light until it
has to work in process: then it imports the engine, captures exactly as
`turnback capture` always did, and starts the work tree's daemon afterwards,
so that this capture is no slower and the next one is fast.
"""

from __future__ import annotations

from . import client

TYPE_CHECKING = False  # typing costs a hook's process milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any


def capture(
    folder: str,
    session: str | None = None,
    label: str | None = None,
    phase: str = "before",
    metadata: dict[str, Any] | None = None,
    messages: list[str] | None = None,
    turn: int | str | None = None,
    warn: Any = None,
) -> dict[str, Any]:
    """The new (or sealed) turn, as `snapshot/capture` returns it.

    Raises the engine's errors (`TurnbackError`; from the daemon, `wire.WireError`
    with the same code, message and data). Messages about interrupted restores that
    were recovered on the way are appended to `messages`; `warn` hears about settings
    from TURNBACK_SETTINGS it refused.
    """
    params: dict[str, Any] = {"phase": phase}
    named = (("session", session), ("label", label), ("metadata", metadata), ("turn", turn))
    for key, value in named:
        if value is not None:
            params[key] = value
    import os

    # Settings of its own (TURNBACK_SETTINGS) are this process's: the daemon has its own.
    settings = None
    if os.environ.get("TURNBACK_SETTINGS"):
        from ..config import settings_from_env

        settings = settings_from_env(warn or (lambda _message: None))
    else:
        result = client.call(folder, "snapshot/capture", params, messages=messages)
        if result is not None:
            return result

    from ..engine import Engine

    try:
        engine = Engine(os.path.abspath(folder), settings)
        try:
            from ..wire import to_wire

            return to_wire(engine.capture(session, label, phase, metadata, turn=turn))
        finally:
            if messages is not None:
                messages.extend(engine.take_recovered())
    finally:
        client.start(folder)  # after the capture, so that it is no slower
