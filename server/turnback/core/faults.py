"""Fault injection for crash tests: die after the N-th durable step of a process.

`TURNBACK_FAULT_AFTER=N` makes the process SIGKILL itself right after its N-th
staged file, file write or ref update, so tests can stop an operation at every
point where the disk changes and check that the next process recovers a whole
state. `TURNBACK_FAULT_SIGNAL` names another signal to send (`TERM`, `INT`): what a
user's Ctrl-C or a closed terminal does, which the process may handle.
Unset (the default) it costs one comparison per step. The variable is read at
the first step, not at import, so importing this module does nothing.
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "TURNBACK_FAULT_AFTER"
SIGNAL_ENV = "TURNBACK_FAULT_SIGNAL"
_limit: int | None = None  # read once, at the first step
_steps = 0


def step(_what: str) -> None:
    """Marks a durable step (a file staged or written, or a ref updated)."""
    global _limit, _steps
    if _limit is None:
        _limit = int(os.environ.get(FAULT_ENV) or 0)
    if not _limit:
        return
    _steps += 1
    if _steps == _limit:  # once: a handled signal lets the process go on (to roll back)
        name = os.environ.get(SIGNAL_ENV) or "KILL"
        os.kill(os.getpid(), getattr(signal, f"SIG{name}"))
