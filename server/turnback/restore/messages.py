"""What an undo or redo says: the result for nothing to do, a failure's state, and where a
forced restore kept what it overwrote."""

from __future__ import annotations

from ..history.timeline import RescuedVersion, TurnRecord
from ..results import RestoreResult, SkippedPath
from .plan import RestoreError


def say_rescued(result: RestoreResult, rescued: RescuedVersion | None) -> None:
    """Tells where a forced restore kept the edits it overwrote."""
    if rescued is None:
        return
    result.rescued = rescued.to_result()
    result.message += (
        f". The changes it overwrote ({_some(rescued.files)}) are kept as rescued version "
        f"{rescued.id}"
    )


def say_not_restored(result: RestoreResult, gone: list[SkippedPath]) -> None:
    """Names what the state restored to had, but no snapshot held, and is gone now."""
    if not gone:
        return
    result.not_restored = gone
    shown = _some([f"{g.path} ({g.reason})" for g in gone])
    result.message += (
        f". Not brought back, as no snapshot held {'them' if len(gone) > 1 else 'it'}: {shown}"
    )


def _some(names: list[str]) -> str:
    """The first three of `names`, for a one-line message."""
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def failure_state(failed: RestoreError) -> str:
    """What the work tree holds after a failed restore, said plainly."""
    if not failed.rolled_back:
        state = "The files already written were NOT yet rolled back; the next operation will."
    elif failed.written == 0:
        state = "Nothing was changed."
    else:
        n = failed.written
        state = f"The {n} file{'s were' if n != 1 else ' was'} already written: rolled back."
    if failed.kept:
        state += f" Changed meanwhile and left as they are: {', '.join(failed.kept)}."
    return state


def nothing(operation: str, message: str, dry_run: bool) -> RestoreResult:
    """A restore with nothing to do; a dry run says it was one, as every dry run does."""
    return RestoreResult(operation, 0, [], [], [], message, dry_run=dry_run)


#: A label longer than this is cut in a message (a prompt's first line can be long).
LABEL_SHOWN = 50


def which_turns(turns: list[TurnRecord]) -> str:
    """The turns a restore acted on, as a person names them: `turn 3 "Fix the tests"`, or
    `turns 2-4`; the session's default changes as other agents capture, so say which."""
    numbers = sorted(t.turn for t in turns)
    if len(numbers) > 1 and numbers[-1] - numbers[0] == len(numbers) - 1:
        return f"turns {numbers[0]}-{numbers[-1]}"
    if len(numbers) > 1:  # an undone turn dropped between them (a later capture drops it)
        return "turns " + ", ".join(map(str, numbers))
    label = turns[0].label
    if not label:
        return f"turn {numbers[0]}"
    shown = label if len(label) <= LABEL_SHOWN else label[: LABEL_SHOWN - 1] + "…"
    return f'turn {numbers[0]} "{shown}"'
