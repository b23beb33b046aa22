"""The server's state and how it runs a request: the workspace folders and their engines,
the client's settings, the open documents, and errors mapped to protocol.md's codes.

The handlers (server.py) read their params and hand `TurnbackServer.run` the engine work.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path

from .. import __version__
from ..config import Settings, settings_from_json
from ..core import memory
from ..core.fileuri import to_fs_path
from ..diff.turndiff import relative_path
from ..engine import Engine
from ..errors import InvalidParams, NoWorkspace, StorageFailed, TurnbackError
from ..wire import error_code, error_data, to_wire
from .codelens import converted
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


#: Seconds the server waits for a client's answer to its own request: pygls never settles
#: a reply it cannot read (`"result": null` to workspace/configuration or applyEdit).
CLIENT_REPLY_TIMEOUT = 10.0


class TurnbackServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("turnback", __version__, protocol_cls=TurnbackProtocol, max_workers=4)
        self.settings = Settings()
        #: Progress tokens shown to the client -> the request each belongs to (progress.py).
        self.progress_requests: dict[Any, Any] = {}
        #: The warnings shown for the current settings (`apply_settings`).
        self._shown_warnings: set[str] = set()
        self.engines: dict[str, Engine] = {}
        self._engines_lock = threading.Lock()
        #: One lock per folder whose engine is being made: only that folder's requests wait.
        self._making: dict[str, threading.Lock] = {}
        #: Document versions as opened or last saved, by `document_key`: a later version
        #: holds edits.
        self.clean_versions: dict[str, int | None] = {}
        #: Whether each document's editor opened its file without the BOM (VS Code too),
        #: and without the CRLF (Emacs): its text is like the file when it is like it so.
        self.converting: dict[str, tuple[bool, bool]] = {}
        self.watcher = TimelineWatcher(self.open_engines, self.timeline_changed)

    # ---- workspace and settings ----------------------------------------------------------

    def folder_for(self, workspace: str | None) -> str:
        if workspace is not None:
            path = to_fs_path(workspace)  # `file:///abs` and `file:/abs` (RFC 8089) alike
            if path and not os.path.isabs(path):
                path = None  # `file:folder`: relative to nothing a client knows
            if path and not Path(path).is_dir() and self._is_open_folder(path):
                raise NoWorkspace(
                    f"The workspace folder {path} no longer exists (deleted or moved); "
                    "open it where it is now"
                )
            if not path or not Path(path).is_dir():
                raise InvalidParams("workspace", f"must be the file URI of a folder: {workspace}")
            return path
        folders = list(self.workspace.folders.values())
        if folders:
            path = to_fs_path(folders[0].uri)
            if path:
                return path
        root = self.workspace.root_uri and to_fs_path(self.workspace.root_uri)
        if root:  # (pygls's own root_path reads `file://localhost/abs` as /localhost/abs)
            return root
        raise NoWorkspace("No workspace folder is open; pass 'workspace' (a folder URI)")

    def _is_open_folder(self, path: str) -> bool:
        """Whether `path` is one of the client's workspace folders (or its root path)."""
        opened = {to_fs_path(f.uri) for f in self.workspace.folders.values()}
        root = self.workspace.root_uri and to_fs_path(self.workspace.root_uri)
        return path in opened or path == root

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
        """The folder's engine, made on first use, its watch set up on a thread of its own.

        Requests for the same folder wait while it is made (requests and `initialized`
        may ask at once), the other folders' requests do not; none waits for the watch,
        and a capture asked meanwhile goes first (snapshot/watchsetup.py).
        """
        folder = str(Path(self.folder_for(workspace)).resolve())
        with self._engines_lock:
            engine = self.engines.get(folder)
            if engine is not None:
                return engine
            making = self._making.setdefault(folder, threading.Lock())
        with making:
            with self._engines_lock:
                engine = self.engines.get(folder)
            if engine is None:
                engine = Engine(folder, self.settings)
                engine.start_watching()  # a long-lived server: captures look only at what changed
                self.watcher.watch(engine)
                with self._engines_lock:
                    engine.settings = self.settings  # any applied while it was being made
                    self.engines[folder] = engine
                    del self._making[folder]
        return engine

    def open_engines(self) -> list[Engine]:
        """The engines made so far (a copy: another thread may be adding one)."""
        with self._engines_lock:
            return list(self.engines.values())

    def workspace_uri(self, engine: Engine) -> str:
        return from_fs_path(str(engine.ws.root)) or str(engine.ws.root)

    def apply_settings(self, data: Any) -> None:
        """Settings from a client's whole `turnback` section: a key it leaves out, or one
        whose value is refused, is the default again (not the value it had before). A
        client with nothing to say (None) keeps the current settings; a warning already
        shown for the same section is not shown again (the notification and the fetch
        that follows it carry the same one)."""
        warnings: list[str] = []
        if isinstance(data, dict) and "turnback" in data:
            data = data["turnback"]
            if data is not None and not isinstance(data, dict):
                warnings.append("The turnback settings are not an object; using the defaults")
                data = {}
        if data is None:
            return
        self.settings, refused = settings_from_json(data)
        warnings += refused
        for engine in self.open_engines():
            engine.settings = self.settings
        for warning in warnings:
            if warning not in self._shown_warnings:
                self.window_show_message(
                    types.ShowMessageParams(type=types.MessageType.Warning, message=warning)
                )
        self._shown_warnings = set(warnings)

    async def fetch_configuration(self) -> None:
        caps = self.client_capabilities.workspace
        if not (caps and caps.configuration):
            return
        try:
            result = await asyncio.wait_for(  # (a reply pygls cannot read never settles)
                self.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section="turnback")])
                ),
                CLIENT_REPLY_TIMEOUT,
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
        for key, document in list(self.workspace.text_documents.items()):
            path = to_fs_path(document.uri)  # (the key is decoded already: not a URI)
            if not path or self.clean_versions.get(key) == document.version:
                continue
            try:
                rel = relative_path(root, path)  # also through a symlinked folder
            except InvalidParams:
                continue  # another folder's document
            try:
                on_disk = Path(path).read_bytes()
            except OSError:
                on_disk = None
            held = document.source.encode()
            if on_disk == held:
                continue
            # Like the file as this editor converts it: not unlike it. (A VS Code user's
            # switch to LF, not yet saved, is unsaved: VS Code keeps CRLF in its text.)
            bom, crlf = self.converting.get(key, (False, False))
            if on_disk is None or converted(on_disk, bom, crlf) != held:
                dirty.add(rel)
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
                progress = Progress(
                    self, progress_title, params.token(), msg_id, self.progress_requests
                )
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
        except OSError as error:  # the file system refused: the user's to fix, not a bug
            logger.warning("The file system refused a request\n%s", traceback.format_exc())
            raise to_rpc_error(StorageFailed.from_os_error(error)) from None
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


#: Files larger than this are taken as opened clean (reading them at every open costs more
#: than the rare restored buffer is worth).
_OPEN_CHECK_LIMIT = 8 * 1024 * 1024


def saved_bytes(path: str | None) -> bytes | None:
    """The file as saved, up to the size an open document is compared at; None if it is
    gone, larger, or unreadable."""
    if not path:
        return None
    try:
        if os.path.getsize(path) > _OPEN_CHECK_LIMIT:
            return None
        return Path(path).read_bytes()
    except OSError:
        return None


def opened_unsaved(path: str | None, text: str, on_disk: bytes | None) -> bool:
    """Whether a document opens with text its file (`on_disk`, as `saved_bytes` read it)
    does not hold. Line endings and a BOM are the editor's to choose, and a file that is not
    UTF-8 cannot be compared with the editor's reading of it: both count as the same (as
    every document did before); so does a file too large to compare, or unreadable."""
    if not path:
        return False
    if on_disk is None:
        return bool(text) and not os.path.lexists(path)  # a buffer for a file not written yet
    try:
        saved = on_disk.decode("utf-8")
    except UnicodeDecodeError:
        return False
    normal = saved.removeprefix("\ufeff").replace("\r\n", "\n")
    return normal != text.removeprefix("\ufeff").replace("\r\n", "\n")
