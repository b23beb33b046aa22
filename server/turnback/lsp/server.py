"""The LSP front: thin handlers that read params and hand the engine its work.

Every custom method takes raw JSON params (see protocol.py) and gives its engine work
to `TurnbackServer.run` (language_server.py), which runs it in a worker thread so the
event loop keeps answering and turns engine errors into JSON-RPC errors with the codes
protocol.md documents.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ..core.fileuri import to_fs_path
from ..diff.turndiff import relative_path
from ..engine import Engine, RestoreOptions
from ..errors import InvalidParams, TurnbackError
from . import codelens
from .language_server import CLIENT_REPLY_TIMEOUT, TurnbackServer, opened_unsaved, saved_bytes
from .params import Params
from .progress import Progress
from .pygls_internals import document_key, finish_requests, open_document

logger = logging.getLogger(__name__)


#: Handlers by LSP method and by command name, registered on each server `create_server` makes.
_FEATURES: list[tuple[str, Callable[..., Any]]] = []
_COMMANDS: list[tuple[str, Callable[..., Any]]] = []


def feature(method: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(handler: Callable[..., Any]) -> Callable[..., Any]:
        _FEATURES.append((method, handler))
        return handler

    return register


def command(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(handler: Callable[..., Any]) -> Callable[..., Any]:
        _COMMANDS.append((name, handler))
        return handler

    return register


def create_server() -> TurnbackServer:
    """A new server with every handler registered (`turnback serve`, the daemon, tests)."""
    server = TurnbackServer()
    for method, handler in _FEATURES:
        server.feature(method)(handler)
    for name, handler in _COMMANDS:
        server.command(name)(handler)
    return server


def _restore_options(params: Params, dirty: frozenset[str]) -> RestoreOptions:
    return RestoreOptions(
        turn=params.value("turn"),
        count=params.integer("count", minimum=1) or 1,
        force=params.boolean("force"),
        dry_run=params.boolean("dryRun"),
        dirty=dirty,
    )


# ---- custom requests ---------------------------------------------------------------------


@feature("snapshot/capture")
async def capture(ls: TurnbackServer, raw: Any) -> Any:
    def work(engine: Engine, p: Params, cancelled: Callable[[], bool], progress: Progress | None):
        return engine.capture(
            session=p.string("session"),
            label=p.string("label"),
            phase=p.value("phase", "before"),
            metadata=p.metadata(),
            progress=progress.report if progress else None,
            cancelled=cancelled,
            turn=p.value("turn"),
        )

    return await ls.run(raw, work, progress_title="turnback: capturing", changes_timeline=True)


@feature("snapshot/undo")
async def undo(ls: TurnbackServer, raw: Any) -> Any:
    def work(engine: Engine, p: Params, _cancelled: Any, progress: Progress | None):
        options = _restore_options(p, ls.dirty_paths(engine))
        return engine.undo(p.string("session"), options)

    return await ls.run(raw, work, changes_timeline=True)


@feature("snapshot/redo")
async def redo(ls: TurnbackServer, raw: Any) -> Any:
    def work(engine: Engine, p: Params, _cancelled: Any, progress: Progress | None):
        options = _restore_options(p, ls.dirty_paths(engine))
        return engine.redo(p.string("session"), options)

    return await ls.run(raw, work, changes_timeline=True)


@feature("snapshot/rescue")
async def rescue(ls: TurnbackServer, raw: Any) -> Any:
    def work(engine: Engine, p: Params, *_: Any):
        options = RestoreOptions(
            force=p.boolean("force"), dry_run=p.boolean("dryRun"), dirty=ls.dirty_paths(engine)
        )
        return engine.rescue(p.string("session"), p.value("id"), p.paths("paths"), options)

    return await ls.run(raw, work, changes_timeline=True)


@feature("snapshot/list")
async def list_turns(ls: TurnbackServer, raw: Any) -> Any:
    def work(engine: Engine, p: Params, *_: Any):
        return engine.list(p.string("session"), p.value("limit"), p.boolean("includeFiles"))

    return await ls.run(raw, work)


@feature("snapshot/diff")
async def diff(ls: TurnbackServer, raw: Any) -> Any:
    def work(engine: Engine, p: Params, *_: Any):
        return engine.diff(p.string("session"), p.value("turn"), p.path(), p.value("context", 3))

    return await ls.run(raw, work)


@feature("snapshot/fileContent")
async def file_content(ls: TurnbackServer, raw: Any) -> Any:
    def work(engine: Engine, p: Params, *_: Any):
        turn = p.value("turn")
        path = p.path()
        if turn is None:
            raise InvalidParams("turn", "is required")
        if path is None:
            raise InvalidParams("path", "is required")
        side = p.choice("side", ("before", "after"), "after")
        return engine.file_content(p.string("session"), turn, path, side)

    return await ls.run(raw, work)


@feature("snapshot/prune")
async def prune(ls: TurnbackServer, raw: Any) -> Any:
    def work(engine: Engine, p: Params, *_: Any):
        return engine.prune(
            p.string("session"),
            p.value("keep"),
            p.value("olderThan"),
            p.value("rescued", False),
        )

    return await ls.run(raw, work, changes_timeline=True)


# ---- lifecycle, settings, code lenses, commands ------------------------------------------


@feature(types.INITIALIZE)
def on_initialize(ls: TurnbackServer, params: types.InitializeParams) -> None:
    ls.apply_settings(params.initialization_options)


@feature(types.INITIALIZED)
async def on_initialized(ls: TurnbackServer, _params: types.InitializedParams) -> None:
    await ls.fetch_configuration()
    # Watch every folder from the start: a CLI capture must reach a client that only waits.
    for folder in list(ls.workspace.folders.values()) or [None]:
        try:
            await asyncio.to_thread(ls.engine_for, folder.uri if folder else None)
        except TurnbackError as error:
            logger.info("not watching %s: %s", folder, error.message)
    ls.watcher.start()


#: How long `shutdown` lets requests under way finish (a 2,000-file undo takes ~3 s).
SHUTDOWN_WAIT = 30.0


@feature(types.SHUTDOWN)
async def on_shutdown(ls: TurnbackServer, _params: None) -> None:
    await finish_requests(ls.protocol, ls.protocol.shutdown_id, SHUTDOWN_WAIT)
    for engine in ls.open_engines():
        await asyncio.to_thread(engine.close)


@feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_configuration(ls: TurnbackServer, params: types.DidChangeConfigurationParams) -> None:
    if params.settings:
        ls.apply_settings(params.settings)
    await ls.fetch_configuration()
    ls.refresh_lenses()


@feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def on_progress_cancel(ls: TurnbackServer, params: types.WorkDoneProgressCancelParams) -> None:
    """The progress notification's Cancel button: the request is cancelled as by
    `$/cancelRequest` (a capture records nothing; it is the only request with progress)."""
    request_id = ls.progress_requests.get(params.token)
    if request_id is not None:
        ls.protocol.cancel_requested(request_id)


@feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(ls: TurnbackServer, params: types.DidOpenTextDocumentParams) -> None:
    document = params.text_document
    # Opened already unlike the file (a hot-exit buffer VS Code restores, one edited before
    # the server started): unsaved until saved, not clean as of this version.
    path = to_fs_path(document.uri)
    on_disk = saved_bytes(path)  # read once for both questions
    key = document_key(document.uri)
    unsaved = opened_unsaved(path, document.text, on_disk)
    ls.clean_versions[key] = None if unsaved else document.version
    # How this editor holds the file (without its BOM, or its CRLF): the unsaved-changes
    # check compares as it does (a VS Code buffer switched to LF is unsaved, as it keeps CRLF).
    ls.converting[key] = codelens.conversions(document.text, on_disk)


@feature(types.TEXT_DOCUMENT_DID_SAVE)
def on_save(ls: TurnbackServer, params: types.DidSaveTextDocumentParams) -> None:
    document = open_document(ls.workspace, params.text_document.uri)
    if document is not None:
        ls.clean_versions[document_key(params.text_document.uri)] = document.version


@feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_close(ls: TurnbackServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.clean_versions.pop(document_key(params.text_document.uri), None)
    ls.converting.pop(document_key(params.text_document.uri), None)


@feature(types.TEXT_DOCUMENT_CODE_LENS)
async def code_lens(ls: TurnbackServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    if not ls.settings.code_lens:
        return []
    uri = params.text_document.uri
    path = to_fs_path(uri)
    if not path:
        return []

    def work() -> list[types.CodeLens]:
        try:
            engine = ls.engine_for_document(path)
            rel = relative_path(engine.ws.root, path)
            found = engine.file_baseline(None, rel)
        except TurnbackError:
            return []
        if found is None:
            return []
        turn, before = found
        try:
            # An unopened document is read from disk: gone, a folder, not UTF-8: no lenses.
            text = ls.workspace.get_text_document(uri).source
        except (OSError, ValueError):
            return []
        workspace = ls.workspace_uri(engine)
        return codelens.lenses(uri, rel, before, text, turn, workspace, saved_bytes(path))

    return await asyncio.to_thread(work)


def _command_params(args: Any) -> Any:
    if isinstance(args, list) and args:
        return args[0]
    return None


@command(codelens.UNDO)
async def undo_command(ls: TurnbackServer, *args: Any) -> Any:
    return await undo(ls, _command_params(list(args)))


@command(codelens.REDO)
async def redo_command(ls: TurnbackServer, *args: Any) -> Any:
    return await redo(ls, _command_params(list(args)))


@command(codelens.CAPTURE)
async def capture_command(ls: TurnbackServer, *args: Any) -> Any:
    return await capture(ls, _command_params(list(args)))


@command(codelens.SHOW_DIFF)
async def show_diff_command(ls: TurnbackServer, *args: Any) -> Any:
    return await diff(ls, _command_params(list(args)))


@command(codelens.REVERT_HUNK)
async def revert_hunk_command(ls: TurnbackServer, *args: Any) -> Any:
    raw = _command_params(list(args))

    def work(engine: Engine, p: Params, *_: Any) -> Any:
        uri = p.string("uri")
        if not uri or not to_fs_path(uri):
            raise InvalidParams("uri", "must be the file URI of an open document")
        old_start = p.integer("oldStart", minimum=0)
        old_lines = p.integer("oldLines", minimum=0)
        if old_start is None or old_lines is None:
            raise InvalidParams("oldStart", "oldStart and oldLines are required")
        p.integer("newStart", minimum=0)  # unused (the snapshot's side is what is put
        p.integer("newLines", minimum=0)  # back), but a lens sends them: checked as such
        try:
            rel = relative_path(engine.ws.root, to_fs_path(uri))
        except InvalidParams as outside:
            raise InvalidParams("uri", outside.problem) from None
        found = engine.file_baseline(p.string("session"), rel)
        document = open_document(ls.workspace, uri)
        if document is None:
            raise InvalidParams("uri", "the document is not open")
        if found is None:
            return {"applied": False, "message": "The newest turn did not change this file"}
        lens_turn = p.value("turn")
        if lens_turn is not None and (
            isinstance(lens_turn, bool) or not isinstance(lens_turn, (int, str))
        ):
            raise InvalidParams("turn", "must be a turn number or a turn id")  # True == 1
        if lens_turn is not None and lens_turn not in (found[0].id, found[0].number):
            # A lens drawn before a newer turn: its hunk's lines are that older turn's.
            return {
                "applied": False,
                "message": f"This lens is out of date: turn {found[0].number} is the newest "
                "now; the lenses show its hunks again",
            }
        if not codelens.is_utf8(found[1]):
            return {
                "applied": False,
                "message": "This file is not UTF-8: turnback cannot revert one hunk of it; "
                "Undo turn puts the whole file back byte for byte",
            }
        encoding = ls.workspace.position_encoding or types.PositionEncodingKind.Utf16
        edit = codelens.revert_edit(
            rel,
            found[1],
            document.source,
            old_start,
            old_lines,
            str(encoding),
            saved_bytes(to_fs_path(uri)),
        )
        if edit is None:
            return {"applied": False, "message": "That hunk is no longer in the document"}
        return edit, document.version

    result = await ls.run(raw, work)
    if isinstance(result, dict):
        return result
    caps = ls.client_capabilities.workspace
    if not (caps and caps.apply_edit):
        # It would hang on a client that never answers, or pass on its MethodNotFound.
        return {"applied": False, "message": "This editor does not take edits from the server"}
    edit, version = result
    uri = raw["uri"]
    try:
        # Bounded: pygls never settles a reply it cannot read (`"result": null`), and the
        # command would wait for it forever.
        applied = await asyncio.wait_for(
            ls.workspace_apply_edit_async(
                types.ApplyWorkspaceEditParams(
                    label="Revert hunk", edit=_one_edit(ls, uri, version, edit)
                )
            ),
            CLIENT_REPLY_TIMEOUT,
        )
    except asyncio.TimeoutError:  # (not the built-in one before Python 3.11)
        return {"applied": False, "message": "The editor gave no answer to the edit it could read"}
    except JsonRpcException as refused:  # the editor's error is its answer, not this command's
        return {"applied": False, "message": f"The editor refused the edit: {refused.message}"}
    return {
        "applied": applied.applied,
        "message": "Reverted the hunk"
        if applied.applied
        else (applied.failure_reason or "The editor refused the edit"),
    }


def _one_edit(
    ls: TurnbackServer, uri: str, version: int | None, edit: types.TextEdit
) -> types.WorkspaceEdit:
    """`edit` to the document as the client takes it: `documentChanges` (versioned, so a
    buffer changed since is refused) where it says it reads them, else `changes`."""
    caps = ls.client_capabilities.workspace
    versioned = caps and caps.workspace_edit and caps.workspace_edit.document_changes
    if not versioned:
        return types.WorkspaceEdit(changes={uri: [edit]})
    document = types.OptionalVersionedTextDocumentIdentifier(uri, version)
    return types.WorkspaceEdit(
        document_changes=[types.TextDocumentEdit(text_document=document, edits=[edit])]
    )
