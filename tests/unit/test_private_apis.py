"""The private parts of pygls and pygit2 that turnback relies on are still where it uses them.

A new pygls or pygit2 that moves one fails here, loudly and by name, instead of deep in a
restore; pyproject.toml pins both to the minor versions these were checked on.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import sys
from pathlib import Path

import pygit2
import pytest
from pygit2.enums import DiffOption
from pygls.exceptions import JsonRpcInvalidRequest
from pygls.lsp.client import LanguageClient
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from helpers import make_repo
from turnback.core import pygit2_internals
from turnback.lsp import pygls_internals
from turnback.lsp.protocol import TurnbackProtocol


class _Writer:
    """What pygls writes, frame by frame."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.frames.append(data)

    def close(self) -> None:
        pass

    def messages(self) -> list[dict]:
        return [json.loads(frame.split(b"\r\n\r\n", 1)[1]) for frame in self.frames]


def _server() -> tuple[LanguageServer, _Writer]:
    server = LanguageServer("probe", "0", protocol_cls=TurnbackProtocol)
    writer = _Writer()
    server.protocol.set_writer(writer)
    return server, writer


def test_pygls_keys_open_documents_by_their_decoded_uri():
    # Open documents are found under an escaped URI (a space, an accent) as pygls keeps them.
    from lsprotocol import types
    from pygls.workspace import Workspace

    workspace = Workspace(None)
    uri = "file:///home/me/my%20project%20%C3%A9/a.py"
    workspace.put_text_document(types.TextDocumentItem(uri, "python", 1, "x\n"))
    assert pygls_internals.document_key(uri) in workspace.text_documents
    assert pygls_internals.open_document(workspace, uri).source == "x\n"
    assert pygls_internals.open_document(workspace, "file:///home/me/other.py") is None


def test_pygls_send_error_answers_any_id():
    """_send_response: an error reaches the client for an id, or for none (an unreadable frame)."""
    server, writer = _server()
    pygls_internals.send_error(server.protocol, 7, JsonRpcInvalidRequest(message="why"))
    pygls_internals.send_error(server.protocol, None, JsonRpcInvalidRequest(message="no id"))
    first, second = writer.messages()
    assert first == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": "why"}}
    assert second.get("id") is None and second["error"] == {"code": -32600, "message": "no id"}


def test_pygls_cancel_reaches_the_hook_and_futures_are_tracked():
    """_handle_cancel_notification is still what $/cancelRequest calls; _request_futures holds
    each request's future until it is answered."""
    server, writer = _server()
    protocol = server.protocol
    protocol.initialize_received = True
    protocol.handle_message({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 5}})
    assert protocol.is_cancelled(5)
    future = protocol.send_request("workspace/probe", None)
    msg_id = writer.messages()[-1]["id"]
    assert not pygls_internals.request_finished(protocol, msg_id)
    future.set_result(None)
    assert pygls_internals.request_finished(protocol, msg_id)


def test_pygls_exit_code_follows_shutdown():
    """_shutdown: pygls's exit handler exits 1 before shutdown, 0 once it is marked."""
    for marked, code in ((False, 1), (True, 0)):
        server = LanguageServer("probe", "0", protocol_cls=TurnbackProtocol)
        if marked:
            pygls_internals.mark_shut_down(server.protocol)
        with pytest.raises(SystemExit) as exited:
            next(LanguageServerProtocol.lsp_exit(server.protocol))
        assert exited.value.code == code


async def test_pygls_shutdown_stops_our_reader_and_listener():
    """_stop_event and _server: pygls's shutdown sets the event and closes the TCP listener."""
    server, _writer = _server()
    stop = pygls_internals.new_stop_event(server)
    tcp = await asyncio.start_server(lambda _reader, _writer: None, "127.0.0.1", 0)
    pygls_internals.keep_tcp_server(server, tcp)
    server.shutdown()
    assert stop.is_set() and not tcp.is_serving()


def test_pygls_client_private_parts():
    """_converter, _send_data, _request_futures and _server on the client the tests drive."""
    client = LanguageClient("probe", "0")
    writer = _Writer()
    client.protocol.set_writer(writer)
    pygls_internals.keep_responses_plain(client.protocol)
    future = pygls_internals.send_raw_request(client.protocol, "r1", "snapshot/x", {"a": [1]})
    assert writer.messages() == [
        {"jsonrpc": "2.0", "id": "r1", "method": "snapshot/x", "params": {"a": [1]}}
    ]
    response = {"jsonrpc": "2.0", "id": "r1", "result": {"class": 1, "odd-key": 2}}
    client.protocol.handle_message(client.protocol.structure_message(response))
    assert future.result() == {"class": 1, "odd-key": 2}
    assert pygls_internals.server_process(client) is None  # set by start_io


#: pygls's private names: attributes and methods of the classes turnback and its tests use.
def _pygls_private_names() -> set[str]:
    server, client = LanguageServer("probe", "0"), LanguageClient("probe", "0")
    names: set[str] = set()
    for thing in (server, server.protocol, client, client.protocol):
        names |= set(dir(thing)) | set(vars(thing))
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _own_attributes(cls: ast.ClassDef) -> set[str]:
    """Names a class sets on self in its __init__: its own, even when pygls has one alike."""
    own: set[str] = set()
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            for node in ast.walk(item):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    own.add(node.attr)
    return own


def _private_uses(path: Path, private: set[str]) -> list[str]:
    found = []
    tree = ast.parse(path.read_text())
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        own = _own_attributes(cls)
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef) and node.name in private:
                found.append(f"{path}:{node.lineno} overrides {node.name}")
            elif isinstance(node, ast.Attribute) and node.attr in private - own:
                found.append(f"{path}:{node.lineno} {ast.unparse(node)}")
    for node in ast.walk(tree):
        on_self = isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self"
        if isinstance(node, ast.Attribute) and node.attr in private and not on_self:
            found.append(f"{path}:{node.lineno} {ast.unparse(node)}")
    return found


def test_pygls_private_parts_only_in_pygls_internals():
    """No module but lsp/pygls_internals.py (and this test) touches a private part of pygls."""
    repo = Path(__file__).resolve().parents[2]
    private = _pygls_private_names()
    files = [
        path
        for folder in ("server", "tests", "bench", "scripts")
        for path in (repo / folder).rglob("*.py")
        # bench/.repos (generated trees) and other hidden folders hold no code of ours
        if not any(part.startswith(".") for part in path.relative_to(repo).parts)
        and path.name != "pygls_internals.py"
        and path.resolve() != Path(__file__).resolve()
    ]
    uses = sorted({use for path in files for use in _private_uses(path, private)})
    assert not uses, "private pygls parts outside lsp/pygls_internals.py:\n" + "\n".join(uses)


# statcache, sorted_index and seedcheck go through pygit2's cffi index handle; the scanner
# attaches a repository to a standalone index through Index._repo, and workdir_scan limits
# a work-tree diff to a path list through git_diff_options.pathspec; scan threads' handles
# get an empty index of their own through libgit2's git_repository_set_index (ctypes).
def test_pygit2_config_file_added_to_a_repository_handle(tmp_path: Path):
    # A config file added to one handle at a level is read there, and nowhere else.
    from pygit2.enums import ConfigLevel

    repo = pygit2.init_repository(str(tmp_path / "repo"))
    (tmp_path / "global").write_text("[turnback]\n\tprobe = yes\n")
    pygit2_internals.add_config_file(repo, str(tmp_path / "global"), ConfigLevel.GLOBAL)
    assert repo.config["turnback.probe"] == "yes"
    assert "turnback.probe" not in pygit2.Repository(str(tmp_path / "repo")).config


def test_pygit2_private_parts(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    oid = repo.create_blob(b"hello\n")
    index = pygit2.Index(str(tmp_path / "index"))
    pygit2_internals.attach_repository(index, repo)
    entry, _name = pygit2_internals.new_entry("dir/file.txt", oid, pygit2.GIT_FILEMODE_BLOB)
    entry.file_size = 6
    pygit2_internals.add_entry(index, entry)
    assert len(index) == 1 and index["dir/file.txt"].id == oid
    found = pygit2_internals.entry_at(index, 0)
    assert pygit2_internals.entry_path(found) == b"dir/file.txt"
    assert found.file_size == 6 and hasattr(found, "flags_extended")
    tree = repo[index.write_tree(repo)]
    assert os.fsdecode(tree["dir"].name) == "dir"
    (tmp_path / "repo" / "a").mkdir()
    (tmp_path / "repo" / "a" / "new.txt").write_text("new\n")
    (tmp_path / "repo" / "b.txt").write_text("b\n")
    flags = DiffOption.INCLUDE_UNTRACKED
    everything, _hashed = pygit2_internals.diff_index_to_workdir(repo, index, flags, None)
    limited, _hashed = pygit2_internals.diff_index_to_workdir(repo, index, flags, [b"a"])
    assert sorted(d.new_file.path for d in everything.deltas) == ["a/", "b.txt", "dir/file.txt"]
    assert [d.new_file.path for d in limited.deltas] == ["a/"]
    repo.index.add("b.txt")
    repo.index.write()  # the user's index now has an entry; the emptied handle does not see it
    handle = pygit2.Repository(str(tmp_path / "repo"))
    assert pygit2_internals.use_empty_index(handle) or sys.platform == "win32"
    if sys.platform != "win32":
        assert len(handle.index) == 0 and len(pygit2.Repository(str(tmp_path / "repo")).index) == 1


# Proves libgit2's mempack, reached through ctypes, takes every write of its handle, reads
# it back (and the repository's own objects), keeps it off disk, and forgets it on reset.
@pytest.mark.skipif(sys.platform == "win32", reason="libgit2's symbols are not exported there")
def test_pygit2_mempack_holds_writes_in_memory(tmp_path: Path):
    repo = pygit2.init_repository(str(tmp_path / "repo"))
    on_disk = repo.create_blob(b"already there\n")
    handle = pygit2.Repository(repo.path)
    memory = pygit2_internals.MemoryObjects.attach(handle)
    assert memory is not None

    held = handle.create_blob(b"held in memory\n")

    assert held in handle and held not in pygit2.Repository(repo.path)
    assert memory.read(held) == (3, b"held in memory\n")
    assert memory.read(on_disk) == (3, b"already there\n")
    memory.reset()
    assert held not in handle
    with pytest.raises(KeyError):
        memory.read(held)


# Proves libgit2's perfdata is read: a file rewritten with its own bytes is hashed (and
# makes no delta), a file whose stat is unchanged is not.
def test_files_hashed_by_a_workdir_diff(tmp_path: Path):
    root = make_repo(tmp_path / "repo", {"same.txt": "same\n", "other.txt": "other\n"})
    repo = pygit2.Repository(str(root))
    index = pygit2.Index(str(root / ".git" / "index"))
    diff, hashed = pygit2_internals.diff_index_to_workdir(repo, index, 0, None)
    assert (len(diff), hashed) == (0, 0)
    path = root / "same.txt"
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns - 5_000_000_000))
    diff, hashed = pygit2_internals.diff_index_to_workdir(repo, index, 0, None)
    assert (len(diff), hashed) == (0, 1) or sys.platform == "win32"
