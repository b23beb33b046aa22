"""A scripted agent session through the real turnback language server.

Makes a scratch git repository, starts `turnback serve` over stdio with
pygls's client, and plays an agent harness: capture before each turn, let the
"agent" edit, create, delete and rename files, capture after, then list,
diff, undo and redo, printing what happens at each step.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

import pygit2
from lsprotocol import types
from pygls.lsp.client import LanguageClient


def plain(value: object) -> object:
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}  # type: ignore[attr-defined]
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def make_scratch_repo(root: Path) -> None:
    repo = pygit2.init_repository(str(root), initial_head="main")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def greet(name):\n    return 'hello ' + name\n")
    (root / "src" / "util.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "README.md").write_text("# scratch\n")
    (root / ".gitignore").write_text("*.log\n")
    repo.index.add_all()
    repo.index.write()
    sig = pygit2.Signature("demo", "demo@example.com")
    repo.create_commit("HEAD", sig, sig, "initial", repo.index.write_tree(), [])


def show_tree(root: Path) -> None:
    for path in sorted(p for p in root.rglob("*") if ".git" not in p.parts and p.is_file()):
        print(f"      {path.relative_to(root)}: {path.read_text().splitlines()[0]!r}")


async def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="turnback-demo-")) / "project"
    root.mkdir()
    make_scratch_repo(root)
    env = {**os.environ, "TURNBACK_DATA_DIR": str(root.parent / "data")}
    print(f"Scratch repository: {root}\n")

    client = LanguageClient("turnback-demo", "1.0")
    changes: list[dict] = []
    client.feature("snapshot/didChange")(lambda params: changes.append(plain(params)))
    await client.start_io(sys.executable, "-m", "turnback", "serve", env=env)
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="project")],
        )
    )
    client.initialized(types.InitializedParams())

    async def call(method: str, params: dict) -> dict:
        result = plain(await client.protocol.send_request_async(method, params))
        return result  # type: ignore[return-value]

    print("Turn 1: the agent renames greet() and adds a test")
    turn = await call(
        "snapshot/capture", {"label": "Rename greet", "metadata": {"messageIndex": 2}}
    )
    print(f"  captured turn {turn['turn']} ({turn['id']})")
    (root / "src" / "app.py").write_text("def welcome(name):\n    return 'hello ' + name\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_app.py").write_text("from src.app import welcome\n")
    await call("snapshot/capture", {"phase": "after"})
    print("  sealed turn 1")

    print("\nTurn 2: the agent deletes util.py and renames README.md")
    await call("snapshot/capture", {"label": "Clean up", "metadata": {"messageIndex": 4}})
    (root / "src" / "util.py").unlink()
    (root / "README.md").rename(root / "README.rst")
    (root / "debug.log").write_text("ignored by .gitignore: never touched\n")
    await call("snapshot/capture", {"phase": "after"})
    show_tree(root)

    listing = await call("snapshot/list", {})
    print(f"\nsnapshot/list: canUndo={listing['canUndo']} canRedo={listing['canRedo']}")
    for item in listing["turns"]:
        print(
            f"  turn {item['turn']} {item['label']!r} state={item['state']} sealed={item['sealed']}"
        )

    diff = await call("snapshot/diff", {"turn": 1})
    print("\nsnapshot/diff of turn 1:")
    for item in diff["files"]:
        print(f"  {item['status']:<8} {item['path']} (+{item['additions']} -{item['deletions']})")
    print("  " + diff["files"][0]["diff"].replace("\n", "\n  ").rstrip())

    undone = await call("snapshot/undo", {"count": 2})
    print(f"\nsnapshot/undo count=2: {undone['message']}")
    for item in undone["files"]:
        print(f"  {item['action']:<8} {item['path']}")
    print("  work tree now:")
    show_tree(root)
    print(f"  metadata of the undone turns: {[t['metadata'] for t in undone['turns']]}")

    redone = await call("snapshot/redo", {})
    print(f"\nsnapshot/redo: {redone['message']}")
    for item in redone["files"]:
        print(f"  {item['action']:<8} {item['path']}")

    (root / "src" / "app.py").write_text("def welcome(name):\n    return 'hi ' + name\n")
    try:
        await call("snapshot/undo", {})
    except Exception as error:  # the conflict: a manual edit after the sealed turn
        data = getattr(error, "data", None)
        print(f"\nundo after a manual edit: refused ({getattr(error, 'code', '?')}): {data}")
    forced = await call("snapshot/undo", {"force": True})
    print(f"undo with force: {forced['message']}")
    back = await call("snapshot/redo", {})
    print(f"redo brings the manual edit back: {back['message']}")
    print(f"  src/app.py: {(root / 'src' / 'app.py').read_text().splitlines()[1].strip()!r}")

    await asyncio.sleep(0.8)
    print(f"\nsnapshot/didChange notifications received: {len(changes)}")
    refs = [r for r in pygit2.Repository(str(root)).references if r.startswith("refs/turnback/")]
    print(f"refs under refs/turnback/: {json.dumps(refs)}")
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    print("\nDemo finished.")


if __name__ == "__main__":
    asyncio.run(main())
