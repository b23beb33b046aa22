"""A first end-to-end pass through the real server: capture, edit, undo, redo."""

from __future__ import annotations

from pathlib import Path

from helpers import read, request, write


# Ensures the basic loop works over LSP: a turn's edit is undone and redone.
async def test_capture_undo_redo_roundtrip(client, repo: Path):
    turn = await request(client, "snapshot/capture", {"label": "t1"})
    assert turn["turn"] == 1 and turn["state"] == "active"
    write(repo, "src/app.py", "print('agent')\n")
    result = await request(client, "snapshot/undo")
    assert result["turnsUndone"] == 1
    assert read(repo, "src/app.py") == "print('v1')\n"
    result = await request(client, "snapshot/redo")
    assert result["turnsRedone"] == 1
    assert read(repo, "src/app.py") == "print('agent')\n"
