"""turnback's modules form no import cycle, and importing them acts on nothing.

A server built at import, a libgit2 option set at import or an environment variable read
at import make the order of imports matter and tests interfere; these fail by name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import turnback
from helpers import SERVER_ENV

PACKAGE = Path(turnback.__file__).parent

#: Cycles another branch removes (issue 10, typed results: Restorer without the Engine).
#: Delete an entry when its cycle is gone; a cycle not listed here fails the test.
KNOWN_CYCLES: list[set[str]] = [
    {
        "turnback.engine",
        "turnback.history.running",
        "turnback.restore.rescue",
        "turnback.restore.undo_redo",
    },
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module → the turnback modules it imports (anywhere in its body, lazily or not)."""
    files = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                imported |= {target} | {f"{target}.{alias.name}" for alias in node.names}
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names}
        graph[name] = {dep for dep in imported if dep in files and dep != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for dep in graph[node]:
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    """Every module can be read bottom-up: no two modules import each other, even lazily."""
    graph = import_graph()
    assert "turnback.lsp.server" in graph["turnback.lsp.main"]  # the graph sees lazy imports
    unexpected = [cycle for cycle in cycles(graph) if cycle not in KNOWN_CYCLES]
    assert not unexpected, f"import cycles: {unexpected}"


PROBE = """
import importlib, os, pkgutil, sys
import pygit2
import pygls.lsp.server

acts = []
pygit2.option = lambda *args: acts.append(f"pygit2.option{args}")
original_init = pygls.lsp.server.LanguageServer.__init__
def init(self, *args, **kwargs):
    acts.append("a LanguageServer was built")
    original_init(self, *args, **kwargs)
pygls.lsp.server.LanguageServer.__init__ = init

import turnback
for module in pkgutil.walk_packages(turnback.__path__, "turnback."):
    if not module.name.endswith("__main__"):
        importlib.import_module(module.name)
assert not acts, acts

from turnback.core import faults
os.environ[faults.FAULT_ENV] = "1"  # read at the first step: this step kills the process
faults.step("probe")
print("still alive")
"""


def test_importing_acts_on_nothing():
    """Importing every module builds no server and sets no libgit2 option; faults read late."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=SERVER_ENV, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == -9, done.stdout + done.stderr
    assert "still alive" not in done.stdout


def test_create_server_makes_independent_servers():
    """Each server `create_server` makes has every handler and state of its own."""
    from turnback.lsp.codelens import UNDO
    from turnback.lsp.server import create_server

    first, second = create_server(), create_server()
    for server in (first, second):
        assert {"snapshot/capture", "snapshot/undo", "initialize"} <= set(
            server.protocol.fm.features
        )
        assert UNDO in server.protocol.fm.commands
    assert first.engines is not second.engines and first.watcher is not second.watcher
