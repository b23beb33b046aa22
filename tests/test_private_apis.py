"""The private parts of pygls and pygit2 that turnback relies on are still where it uses them.

A new pygls or pygit2 that moves one fails here, loudly and by name, instead of deep in a
restore; pyproject.toml pins both to the minor versions these were checked on.
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pygit2
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from turnback.core import pygit2_internals
from turnback.lsp.protocol import TurnbackProtocol


# lsp/transport.py sets _stop_event and _server; lsp/protocol.py answers with _send_response,
# reads _request_futures and decides exit codes from _shutdown (pygls's lsp_exit reads it).
def test_pygls_private_parts():
    server = LanguageServer("probe", "0", protocol_cls=TurnbackProtocol)
    assert hasattr(server, "_stop_event") and hasattr(server, "_server")
    protocol = server.protocol
    assert callable(protocol._send_response)
    assert isinstance(protocol._request_futures, dict)
    assert protocol._shutdown is False
    assert "self._shutdown" in inspect.getsource(LanguageServerProtocol.lsp_exit)
    assert "self._shutdown = True" in inspect.getsource(LanguageServerProtocol.lsp_shutdown)


# statcache, userindex and seedcheck go through pygit2's cffi index handle; the scanner
# attaches a repository to a standalone index through Index._repo.
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
