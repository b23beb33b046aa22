"""The timeline as stored: metadata, ordering, sessions, restarts, concurrency and pruning.

Servers are real processes over stdio (pytest-lsp); the CLI shares their storage, so it stands in
for "another process" and for "after a restart".
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from helpers import (
    capture,
    cli_json,
    git,
    list_turns,
    read,
    request,
    start_server,
    write,
)

# ---- helpers ---------------------------------------------------------------------------------


def canonical(value: object) -> str:
    """Exact JSON identity: distinguishes 1, 1.0 and true, and "" from null."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def turnback_refs(repo: Path) -> list[str]:
    """Session refs (the scan cache's anchor ref is not a session)."""
    names = git(repo, "for-each-ref", "--format=%(refname)", "refs/turnback").split()
    return [name for name in names if "/sessions/" in name]


METADATA = {
    "odd-key": "dash",
    "class": "keyword",
    "": "empty key",
    "with space": 1,
    "ünïcödé ключ": "値 🎉 \u2028 \\ \" '",
    "numbers": [0, -1, 1.5, -2.25e-8, 1e100, 2**53, 10**30],
    "null": None,
    "flags": [True, False, None],
    "nested": {"list": [1, {"a": [None, {"b": []}]}], "deep": {"x": {"y": {}}}, "0": "zero"},
    "emptyList": [],
    "emptyObject": {},
    "text": "line 1\nline 2\ttab",
}


# ---- 10: metadata --------------------------------------------------------------------------


# Ensures metadata comes back exactly as sent from capture, list, and after a restart.
async def test_metadata_round_trips_exactly(repo: Path):
    async with start_server(repo) as client:
        turn = await capture(client, label="meta", metadata=METADATA)
        assert canonical(turn["metadata"]) == canonical(METADATA)
        listed = (await list_turns(client))["turns"][0]
        assert listed["id"] == turn["id"]
        assert canonical(listed["metadata"]) == canonical(METADATA)

    async with start_server(repo) as client:
        listed = (await list_turns(client))["turns"][0]
        assert listed["id"] == turn["id"]
        assert canonical(listed["metadata"]) == canonical(METADATA)
    from_cli = cli_json(repo, "list")["turns"][0]
    assert canonical(from_cli["metadata"]) == canonical(METADATA)


# ---- 11: order and states -----------------------------------------------------------------


# Ensures list is newest first and tracks active/undone states and canUndo/canRedo.
async def test_list_order_states_and_flags(client, repo: Path):
    empty = await list_turns(client)
    assert empty["turns"] == [] and not empty["canUndo"] and not empty["canRedo"]
    for n in (1, 2, 3):
        await capture(client, label=f"t{n}")
        write(repo, "src/app.py", f"print('turn {n}')\n")

    def summary(listing: dict) -> list[tuple[int, str, str]]:
        return [(t["turn"], t["label"], t["state"]) for t in listing["turns"]]

    listing = await list_turns(client)
    assert summary(listing) == [(3, "t3", "active"), (2, "t2", "active"), (1, "t1", "active")]
    assert (listing["canUndo"], listing["canRedo"]) == (True, False)
    assert [t["turn"] for t in (await list_turns(client, limit=2))["turns"]] == [3, 2]
    assert [(s["id"], s["turns"]) for s in listing["sessions"]] == [(listing["session"], 3)]

    await request(client, "snapshot/undo")
    listing = await list_turns(client)
    assert summary(listing) == [(3, "t3", "undone"), (2, "t2", "active"), (1, "t1", "active")]
    assert (listing["canUndo"], listing["canRedo"]) == (True, True)

    await request(client, "snapshot/undo", {"count": 2})
    listing = await list_turns(client)
    assert [t["state"] for t in listing["turns"]] == ["undone"] * 3
    assert (listing["canUndo"], listing["canRedo"]) == (False, True)
    assert read(repo, "src/app.py") == "print('v1')\n"

    await request(client, "snapshot/redo")
    listing = await list_turns(client)
    assert [t["state"] for t in listing["turns"]] == ["undone", "undone", "active"]
    assert (listing["canUndo"], listing["canRedo"]) == (True, True)

    await request(client, "snapshot/redo", {"count": 2})
    listing = await list_turns(client)
    assert [t["state"] for t in listing["turns"]] == ["active"] * 3
    assert (listing["canUndo"], listing["canRedo"]) == (True, False)
    assert read(repo, "src/app.py") == "print('turn 3')\n"


# ---- 12: unknown sessions -------------------------------------------------------------------


# Ensures an unknown session has no turns and undo/redo in it do nothing.
async def test_unknown_session_is_empty(client, repo: Path):
    await capture(client, session="real", label="t1")
    write(repo, "src/app.py", "print('agent')\n")

    listing = await list_turns(client, session="nope")
    assert listing["session"] == "nope"
    assert listing["turns"] == []
    assert (listing["canUndo"], listing["canRedo"]) == (False, False)
    assert [s["id"] for s in listing["sessions"]] == ["real"]

    undone = await request(client, "snapshot/undo", {"session": "nope"})
    assert (undone["turnsUndone"], undone["message"]) == (0, "Nothing to undo")
    redone = await request(client, "snapshot/redo", {"session": "nope"})
    assert (redone["turnsRedone"], redone["message"]) == (0, "Nothing to redo")
    assert read(repo, "src/app.py") == "print('agent')\n"
    assert (await list_turns(client, session="real"))["turns"][0]["state"] == "active"


# ---- 13: restarts ----------------------------------------------------------------------------


# Ensures the timeline survives the server's exit: the CLI and a new server see it and can undo.
async def test_timeline_survives_restart(repo: Path):
    async with start_server(repo) as client:
        first = await capture(client, session="s", label="t1")
        write(repo, "src/app.py", "print('turn 1')\n")
        second = await capture(client, session="s", label="t2")
        write(repo, "src/app.py", "print('turn 2')\n")

    from_cli = cli_json(repo, "list", "--session", "s")
    assert [(t["id"], t["label"]) for t in from_cli["turns"]] == [
        (second["id"], "t2"),
        (first["id"], "t1"),
    ]
    assert from_cli["canUndo"] is True

    async with start_server(repo) as client:
        listing = await list_turns(client)
        assert listing["session"] == "s"
        assert [t["id"] for t in listing["turns"]] == [second["id"], first["id"]]
        result = await request(client, "snapshot/undo", {"session": "s"})
        assert result["turnsUndone"] == 1
        assert read(repo, "src/app.py") == "print('turn 1')\n"

    after = cli_json(repo, "list", "--session", "s")
    assert [t["state"] for t in after["turns"]] == ["undone", "active"]
    assert cli_json(repo, "undo", "--session", "s")["turnsUndone"] == 1
    assert read(repo, "src/app.py") == "print('v1')\n"


# ---- 14: concurrency -------------------------------------------------------------------------


# Ensures concurrent captures are serialised into distinct, consecutive turns.
async def test_concurrent_captures_get_distinct_turns(client, repo: Path):
    turns = await asyncio.gather(
        *(capture(client, session="busy", label=f"c{n}") for n in range(10))
    )
    assert sorted(t["turn"] for t in turns) == list(range(1, 11))
    assert len({t["id"] for t in turns}) == 10
    assert all(t["session"] == "busy" for t in turns)
    listing = await list_turns(client, session="busy")
    assert [t["turn"] for t in listing["turns"]] == list(range(10, 0, -1))
    assert {t["id"] for t in listing["turns"]} == {t["id"] for t in turns}


# ---- 15: the default session -----------------------------------------------------------------


# Ensures a request without a session goes to the session most recently captured into.
async def test_default_session_is_most_recent_capture(client, repo: Path):
    assert (await capture(client, session="a", label="a1"))["session"] == "a"
    from_cli = cli_json(repo, "capture", "--session", "b", "--label", "b1")
    assert from_cli["session"] == "b"

    turn = await capture(client, label="no session")
    assert (turn["session"], turn["turn"]) == ("b", 2)
    listing = await list_turns(client)
    assert listing["session"] == "b"
    assert [t["label"] for t in listing["turns"]] == ["no session", "b1"]
    assert [t["label"] for t in (await list_turns(client, session="a"))["turns"]] == ["a1"]


# ---- 16: prune --------------------------------------------------------------------------------


# Ensures prune drops old turns, says what it removed, and deletes emptied sessions' refs.
async def test_prune_removes_turns_and_refs(client, repo: Path):
    xs = [await capture(client, session="x", label=f"x{n}") for n in (1, 2, 3)]
    y = await capture(client, session="y", label="y1")
    refs = turnback_refs(repo)
    assert len(refs) == 2

    result = await request(client, "snapshot/prune", {"session": "x", "keep": 1})
    assert result["removedTurns"] == [
        {"session": "x", "turn": t["turn"], "id": t["id"]} for t in xs[:2]
    ]
    assert result["removedSessions"] == []
    assert [t["id"] for t in (await list_turns(client, session="x"))["turns"]] == [xs[2]["id"]]
    assert turnback_refs(repo) == refs

    result = await request(client, "snapshot/prune", {"session": "x", "keep": 0})
    assert result["removedTurns"] == [{"session": "x", "turn": 3, "id": xs[2]["id"]}]
    assert result["removedSessions"] == ["x"]
    assert turnback_refs(repo) == [r for r in refs if r.endswith("/sessions/y")]
    listing = await list_turns(client, session="y")
    assert [t["id"] for t in listing["turns"]] == [y["id"]]
    assert [s["id"] for s in listing["sessions"]] == ["y"]
    assert (await list_turns(client, session="x"))["turns"] == []
