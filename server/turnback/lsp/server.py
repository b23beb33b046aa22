"""The LSP front: thin handlers that read params, call the engine, map errors.

Every custom method takes raw JSON params (see protocol.py), runs the engine
in a worker thread so the event loop keeps answering, and turns engine errors
into JSON-RPC errors with the codes protocol.md documents.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from .. import __version__
from ..config import Settings, settings_from_json
from ..core import memory
from ..diff.turndiff import relative_path
from ..engine import Engine, RestoreOptions
from ..errors import InvalidParams, NoWorkspace, TurnbackError
from ..wire import error_code, error_data, to_wire
from . import codelens
from .params import Params
from .progress import Progress
from .protocol import TurnbackProtocol
from .watcher import TimelineWatcher

logger = logging.getLogger(__name__)

_ERROR_CLASSES: dict[int, type[JsonRpcException]] = {}


def to_rpc_error(error: TurnbackError) -> JsonRpcException:
    """A pygls exception carrying the code, message and data wire.py maps the error to."""
    code = error_code(error)
    cls = _ERROR_CLASSES.setdefault(
        code, type(f"TurnbackRpcError{abs(code)}", (JsonRpcException,), {"CODE": code})
    )
    return cls(message=error.message, data=error_data(error))


class TurnbackServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("turnback", __version__, protocol_cls=TurnbackProtocol, max_workers=4)
        self.settings = Settings()
        self.engines: dict[str, Engine] = {}
        self._engines_lock = threading.Lock()
        #: Document versions as opened or last saved: a later version holds edits.
        self.clean_versions: dict[str, int | None] = {}
        self.watcher = TimelineWatcher(lambda: list(self.engines.values()), self.timeline_changed)

    # ---- workspace and settings ----------------------------------------------------------

    def folder_for(self, workspace: str | None) -> str:
        if workspace is not None:
            path = to_fs_path(workspace) if "://" in workspace else None
            if not path or not Path(path).is_dir():
                raise InvalidParams("workspace", f"must be the file URI of a folder: {workspace}")
            return path
        folders = list(self.workspace.folders.values())
        if folders:
            path = to_fs_path(folders[0].uri)
            if path:
                return path
        if self.workspace.root_path:
            return self.workspace.root_path
        raise NoWorkspace("No workspace folder is open; pass 'workspace' (a folder URI)")

    def engine_for_document(self, path: str) -> Engine:
        """The engine of the workspace folder holding `path` (the deepest one)."""
        holders = [
            folder
            for f in self.workspace.folders.values()
            if (folder := to_fs_path(f.uri)) and Path(path).is_relative_to(folder)
        ]
        if not holders:
            return self.engine_for(None)
        return self.engine_for(from_fs_path(max(holders, key=len)))

    def engine_for(self, workspace: str | None) -> Engine:
        folder = str(Path(self.folder_for(workspace)).resolve())
        with self._engines_lock:  # requests and `initialized` may ask at once
            return self._engine(folder)

    def _engine(self, folder: str) -> Engine:
        engine = self.engines.get(folder)
        if engine is None:
            engine = Engine(folder, self.settings)
            engine.enable_watcher()  # a long-lived server: captures look only at what changed
            self.engines[folder] = engine
            self.watcher.watch(engine)
        return engine

    def workspace_uri(self, engine: Engine) -> str:
        return from_fs_path(str(engine.ws.root)) or str(engine.ws.root)

    def apply_settings(self, data: Any) -> None:
        if isinstance(data, dict) and isinstance(data.get("turnback"), dict):
            data = data["turnback"]
        self.settings, warnings = settings_from_json(data, self.settings)
        for engine in self.engines.values():
            engine.settings = self.settings
        for warning in warnings:
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=warning)
            )

    async def fetch_configuration(self) -> None:
        caps = self.client_capabilities.workspace
        if not (caps and caps.configuration):
            return
        try:
            result = await self.workspace_configuration_async(
                types.ConfigurationParams(items=[types.ConfigurationItem(section="turnback")])
            )
        except Exception as error:  # a client that cannot answer keeps the current settings
            logger.warning("workspace/configuration failed: %s", error)
            return
        if result:
            self.apply_settings(result[0])

    def dirty_paths(self, engine: Engine) -> frozenset[str]:
        """Open documents with unsaved edits: edited since opened or saved, and unlike disk.

        A buffer that merely went stale (the agent rewrote the file and the editor did
        not reload it) has no edits of the user's, so it is not dirty.
        """
        dirty = set()
        root = engine.ws.root
        for uri, document in list(self.workspace.text_documents.items()):
            path = to_fs_path(uri)
            if not path or not Path(path).is_relative_to(root):
                continue
            if self.clean_versions.get(uri) == document.version:
                continue
            try:
                on_disk = Path(path).read_bytes()
            except OSError:
                on_disk = None
            if on_disk != document.source.encode():
                dirty.add(Path(path).relative_to(root).as_posix())
        return frozenset(dirty)

    # ---- telling the client ------------------------------------------------------------

    def timeline_changed(self, engine: Engine, sessions: list[str]) -> None:
        """One `snapshot/didChange` per changed session, then fresh code lenses."""
        for session in sessions:
            self.protocol.notify(
                "snapshot/didChange", {"workspace": self.workspace_uri(engine), "session": session}
            )
        self.refresh_lenses()

    def refresh_lenses(self) -> None:
        caps = self.client_capabilities.workspace
        if caps and caps.code_lens and caps.code_lens.refresh_support:
            asyncio.get_running_loop().create_task(self._refresh_lenses())

    async def _refresh_lenses(self) -> None:
        try:
            await self.workspace_code_lens_refresh_async(None)
        except Exception as error:  # an old client may not support it
            logger.debug("codeLens/refresh failed: %s", error)

    # ---- running requests ----------------------------------------------------------------

    async def run(
        self,
        raw: Any,
        work: Callable[[Engine, Params, Callable[[], bool], Progress | None], Any],
        progress_title: str | None = None,
        changes_timeline: bool = False,
    ) -> Any:
        """Reads params, runs `work` in a thread, maps errors; the server stays up."""
        msg_id = self.protocol.msg_id
        progress: Progress | None = None
        try:
            params = Params(raw)
            engine = await asyncio.to_thread(self.engine_for, params.string("workspace"))
            if progress_title:
                progress = Progress(self, progress_title, params.token())
                progress.start()

            def cancelled() -> bool:
                return msg_id is not None and self.protocol.is_cancelled(msg_id)

            try:
                result = await asyncio.to_thread(work, engine, params, cancelled, progress)
                return to_wire(result)  # the engine's dataclasses as protocol.md's JSON
            finally:
                self._show_recovered(engine)
        except TurnbackError as error:
            raise to_rpc_error(error) from None
        except JsonRpcException:
            raise
        except Exception as error:
            raise self._internal_error(error) from None
        finally:
            if progress is not None:
                progress.finish()
            if msg_id is not None:
                self.protocol.forget(msg_id)
            if changes_timeline:
                self.watcher.check_soon()
            asyncio.get_running_loop().run_in_executor(None, memory.return_free_heap)

    def _show_recovered(self, engine: Engine) -> None:
        """Tells the user about interrupted restores the request's lock recovered."""
        for message in engine.take_recovered():
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=message)
            )

    def _internal_error(self, error: Exception) -> JsonRpcException:
        """A bug: its traceback to the log and the client's log, an InternalError without it."""
        logger.error("Internal error\n%s", traceback.format_exc())
        self.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Error,
                message=f"turnback internal error: {traceback.format_exc()}",
            )
        )
        summary = f"Internal error: {type(error).__name__}: {error} (details in the log)"
        return to_rpc_error(TurnbackError(summary))  # reason INTERNAL: -32603, no data


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


@feature(types.SHUTDOWN)
async def on_shutdown(ls: TurnbackServer, _params: None) -> None:
    for engine in list(ls.engines.values()):
        await asyncio.to_thread(engine.close)


@feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_configuration(ls: TurnbackServer, params: types.DidChangeConfigurationParams) -> None:
    if params.settings:
        ls.apply_settings(params.settings)
    await ls.fetch_configuration()
    ls.refresh_lenses()


@feature(types.TEXT_DOCUMENT_DID_OPEN)
def on_open(ls: TurnbackServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.clean_versions[params.text_document.uri] = params.text_document.version


@feature(types.TEXT_DOCUMENT_DID_SAVE)
def on_save(ls: TurnbackServer, params: types.DidSaveTextDocumentParams) -> None:
    document = ls.workspace.text_documents.get(params.text_document.uri)
    if document is not None:
        ls.clean_versions[params.text_document.uri] = document.version


@feature(types.TEXT_DOCUMENT_DID_CLOSE)
def on_close(ls: TurnbackServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.clean_versions.pop(params.text_document.uri, None)


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
        text = ls.workspace.get_text_document(uri).source
        return codelens.lenses(uri, rel, before, text, turn, ls.workspace_uri(engine))

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
        rel = relative_path(engine.ws.root, to_fs_path(uri))
        found = engine.file_baseline(p.string("session"), rel)
        document = ls.workspace.text_documents.get(uri)
        if document is None:
            raise InvalidParams("uri", "the document is not open")
        if found is None:
            return {"applied": False, "message": "The newest turn did not change this file"}
        edit = codelens.revert_edit(rel, found[1], document.source, old_start, old_lines)
        if edit is None:
            return {"applied": False, "message": "That hunk is no longer in the document"}
        return edit, document.version

    result = await ls.run(raw, work)
    if isinstance(result, dict):
        return result
    edit, version = result
    uri = raw["uri"]
    applied = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(
            label="Revert hunk",
            edit=types.WorkspaceEdit(
                document_changes=[
                    types.TextDocumentEdit(
                        text_document=types.OptionalVersionedTextDocumentIdentifier(uri, version),
                        edits=[edit],
                    )
                ]
            ),
        )
    )
    return {
        "applied": applied.applied,
        "message": "Reverted the hunk"
        if applied.applied
        else (applied.failure_reason or "The editor refused the edit"),
    }
