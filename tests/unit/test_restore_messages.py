"""restore/messages.py: what an undo or redo says."""

from __future__ import annotations

from types import SimpleNamespace

from turnback.restore.messages import which_turns


def turns(*numbers: int, label: str = "") -> list:
    return [SimpleNamespace(turn=n, label=label) for n in numbers]


# Ensures the turns a restore names are the ones it acted on: turns 2 and 4 (turn 3 undone
# and dropped by a later capture) were said as "turns 2-4", naming a turn that is gone.
def test_the_turns_named_are_those_acted_on():
    assert which_turns(turns(2, 3, 4)) == "turns 2-4"
    assert which_turns(turns(4, 2)) == "turns 2, 4"
    assert which_turns(turns(7, label="Fix the parser")) == 'turn 7 "Fix the parser"'
    assert which_turns(turns(7, label="x" * 80)) == f'turn 7 "{"x" * 49}…"'
