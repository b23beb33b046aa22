"""wire.py, the one place engine results and errors become protocol.md's JSON.

The suite's LSP, CLI and Neovim tests check the wire end to end; these check the tables
themselves against protocol.md, so that a new reason or result cannot miss the contract.
"""

from __future__ import annotations

import re
from pathlib import Path

from turnback import results as r
from turnback.cli import _EXIT_CODES, EXIT_FAILED, EXIT_INTERNAL, EXIT_USAGE
from turnback.errors import (
    Cancelled,
    Conflict,
    InvalidParams,
    NoOpenTurn,
    Reason,
    RequestFailed,
    RestoreFailed,
    TurnbackError,
)
from turnback.wire import WireError, error_code, error_data, error_to_wire, to_wire

PROTOCOL = (Path(__file__).resolve().parents[2] / "protocol.md").read_text()


def _reasons_table() -> dict[str, list[str]]:
    """protocol.md's RequestFailed reasons → the extra data fields its table names."""
    table = PROTOCOL.split("`RequestFailed` reasons:", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*) \|", table, re.MULTILINE)
    return {reason: re.findall(r"`(\w+)`", extra) for reason, extra in rows}


# Proves every failure reason the engine can raise is in protocol.md's reasons table, and
# every reason in the table is one the engine has: the two lists cannot drift.
def test_every_failure_reason_is_documented():
    failures = {
        reason.value
        for reason in Reason
        if reason not in (Reason.INVALID_PARAMS, Reason.CANCELLED, Reason.INTERNAL)
    }
    assert failures == set(_reasons_table())


# Proves the codes protocol.md gives: bad params -32602 with {field}, cancelled -32800 and
# internal -32603 without data, every other reason -32803 with {reason, ...}.
def test_reasons_map_to_the_documented_codes():
    assert error_to_wire(InvalidParams("turn", "is wrong")) == {
        "code": -32602,
        "message": "Invalid parameter 'turn': is wrong",
        "data": {"field": "turn"},
    }
    assert (error_code(Cancelled()), error_data(Cancelled())) == (-32800, None)
    assert (error_code(TurnbackError("bug")), error_data(TurnbackError("bug"))) == (-32603, None)
    assert error_to_wire(NoOpenTurn("s"))["data"] == {"reason": "noOpenTurn", "session": "s"}
    # A turn named by an id is quoted: "No turn 1" read as turn number 1, which existed.
    assert "No turn '1' in session" in NoOpenTurn("s", not_newest="1", exists=False).message
    assert "No turn 7 in session" in NoOpenTurn("s", not_newest=7, exists=False).message
    assert error_code(Conflict(["a"], "undo")) == -32803
    assert error_data(RequestFailed("no state")) == {"reason": "failed"}


# Proves snake_case details reach the wire as the camelCase fields protocol.md lists.
def test_details_become_the_documented_fields():
    failed = RestoreFailed("failed", path="a", rolled_back=True, saved="c0", kept=[])
    data = error_data(failed)
    expected = {"reason": "restoreFailed", "path": "a", "rolledBack": True, "saved": "c0"}
    assert data == {**expected, "kept": []}
    assert list(data)[1:] == _reasons_table()["restoreFailed"]


# Proves a daemon's answer passes through a front byte for byte, and keeps its reason
# (a hook tells "no open turn" apart by it).
def test_a_wire_error_round_trips():
    for error in (NoOpenTurn("s"), InvalidParams("label", "bad"), Cancelled()):
        wire = error_to_wire(error)
        again = WireError(wire["code"], wire["message"], wire["data"])
        assert error_to_wire(again) == wire
        assert again.reason is error.reason


# Proves the CLI's exit codes: 2 for bad input, 3 for a bug, 1 for every refusal.
def test_cli_exit_codes_by_reason():
    assert _EXIT_CODES.get(Reason.INVALID_PARAMS) == EXIT_USAGE == 2
    assert _EXIT_CODES.get(Reason.INTERNAL) == EXIT_INTERNAL == 3
    for reason in Reason:
        if reason not in (Reason.INVALID_PARAMS, Reason.INTERNAL):
            assert _EXIT_CODES.get(reason, EXIT_FAILED) == 1, reason


# Proves a Turn's optional fields are left out when unset (as protocol.md's Turn says),
# and that a dict already on the wire (the daemon's answer) passes unchanged.
def test_turn_leaves_out_what_is_unset():
    turn = r.Turn("abc", "s", 1, "Turn 1", "t0", "active", False, None, [])
    assert to_wire(turn) == {
        "id": "abc",
        "session": "s",
        "turn": 1,
        "label": "Turn 1",
        "createdAt": "t0",
        "state": "active",
        "sealed": False,
        "metadata": None,
        "skipped": [],
    }
    answer = {"id": "abc", "turn": 1}
    assert to_wire(answer) is answer
