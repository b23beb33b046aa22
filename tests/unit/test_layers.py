"""The engine's layers, checked from the source: nothing imports upwards.

core ← snapshot, history, diff ← restore ← engine ← fronts (cli, wire, lsp, daemon, the
hooks' runner). Every import counts: at module level, inside a function, and under
TYPE_CHECKING alike, so that a layer never needs one above it, not even for a type.
(test_import_hygiene.py checks that no two modules import each other.)
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "turnback"

#: The lowest layer first; a module is in the layer of its longest matching prefix.
LAYERS: list[tuple[str, ...]] = [
    ("turnback", "turnback.errors", "turnback.config", "turnback.results"),
    ("turnback.core",),
    # What a turn is and holds; hooks.hints says how to roll an agent's conversation back
    # after an undo (the engine adds it to undo results), from hooks.harnesses' table.
    (
        "turnback.snapshot",
        "turnback.history",
        "turnback.diff",
        "turnback.hooks.hints",
        "turnback.hooks.harnesses",
    ),
    ("turnback.restore",),
    ("turnback.engine",),
    (
        "turnback.wire",
        "turnback.cli",
        "turnback.__main__",
        "turnback.lsp",
        "turnback.daemon",
        "turnback.hooks",
    ),
]
#: Only the LSP front and the daemon (which serves it) speak LSP through pygls.
LSP_LIBRARIES = ("pygls", "lsprotocol")
LSP_FRONTS = ("turnback.lsp", "turnback.daemon")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """Every module `name` imports (turnback's own and third-party), wherever the import is."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES)
    return found


def layer_of(name: str) -> int:
    best, layer = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = name == prefix or name.startswith(prefix + ".")
            if matches and len(prefix) > best and (prefix != "turnback" or name == prefix):
                best, layer = len(prefix), index
    assert layer >= 0, f"{name} is in no layer: add it to LAYERS"
    return layer


GRAPH = {name: {m for m in imports_of(name) if m in MODULES and m != name} for name in MODULES}


# Proves no module imports one from a higher layer (restore/ and history/ never need the
# engine; the engine never needs a front), and that every module has a layer.
def test_no_import_goes_up_a_layer():
    upward = [
        f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})"
        for name, targets in GRAPH.items()
        for target in sorted(targets)
        if layer_of(target) > layer_of(name)
    ]
    assert not upward, "\n".join(upward)


# Proves pygls and lsprotocol stay in the LSP front: the engine and the CLI never load them.
def test_lsp_libraries_only_in_the_lsp_front():
    outside = [
        f"{name} imports {module}"
        for name in MODULES
        if not name.startswith(LSP_FRONTS)
        for module in sorted(imports_of(name))
        if module.split(".")[0] in LSP_LIBRARIES
    ]
    assert not outside, "\n".join(outside)


# Proves the check above can fail: the parser sees lazy imports and places modules in
# the layers the README draws.
def test_the_checker_sees_imports_and_layers():
    assert "turnback.engine" in imports_of("turnback.cli")  # imported inside a function
    assert "turnback.wire" in imports_of("turnback.daemon.client")
    assert layer_of("turnback.core.locking") < layer_of("turnback.history.running")
    assert layer_of("turnback.history.running") < layer_of("turnback.restore.rescue")
    assert layer_of("turnback.restore.undo_redo") < layer_of("turnback.engine")
    assert layer_of("turnback.engine") < layer_of("turnback.lsp.server")
