"""The `turnback` command line: the same engine and storage as the server.

An agent harness calls it from its hooks (`turnback capture --label ...`
before a turn, `turnback capture --phase after` after it); a person uses it
to list, diff, undo and redo from a terminal. `turnback serve` starts the
language server, `turnback daemon` the background server a capture goes to first.
Only argparse and the standard library load up front: a hook that a running
daemon answers never imports pygit2.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys

from . import __version__
from .errors import INTERNAL_ERROR, INVALID_PARAMS, REQUEST_FAILED, InvalidParams, TurnbackError

TYPE_CHECKING = False  # typing costs a hook's process milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--session", help="session name (default: the most recently captured)")
    common.add_argument("--json", action="store_true", help="print the protocol's JSON result")
    common.add_argument("-C", "--workspace", default=".", help="workspace folder (default: .)")

    parser = argparse.ArgumentParser(prog="turnback", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"turnback {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    serve.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    serve.add_argument("--stdio", action="store_true", help="use stdio (the default)")
    serve.add_argument("--log-file", help="write the server's log here")

    daemon = sub.add_parser("daemon", help="serve captures for one work tree in the background")
    daemon.add_argument("-C", "--workspace", default=".", help="work tree (default: .)")
    daemon.add_argument(
        "--idle-timeout", type=float, metavar="SECONDS", help="exit after this long unused"
    )

    capture = sub.add_parser("capture", parents=[common], help="snapshot before/after a turn")
    capture.add_argument("--label")
    capture.add_argument("--phase", choices=("before", "after"), default="before")
    capture.add_argument("--metadata", help="a JSON object stored with the turn")

    for name, what in (("undo", "undo the newest turns"), ("redo", "redo undone turns")):
        cmd = sub.add_parser(name, parents=[common], help=what)
        cmd.add_argument("-n", "--count", type=int, default=1)
        cmd.add_argument("--turn", help=f"{name} every turn down/up to this one (number or id)")
        cmd.add_argument("--force", action="store_true", help="overwrite conflicting edits")
        cmd.add_argument("--dry-run", action="store_true", help="say what would change")

    listing = sub.add_parser("list", parents=[common], help="show the timeline")
    listing.add_argument("--limit", type=int)

    diff = sub.add_parser("diff", parents=[common], help="show what a turn changed")
    diff.add_argument("turn", nargs="?", help="turn number or id (default: newest active)")
    diff.add_argument("--path")
    diff.add_argument("--context", type=int, default=3)

    prune = sub.add_parser("prune", parents=[common], help="drop old turns and sessions")
    prune.add_argument("--keep", type=int, help="turns to keep per session")
    prune.add_argument("--older-than", help='drop turns older than this ("7d", "12h", a time)')
    return parser


def _turn_line(turn: dict[str, Any]) -> str:
    state = "" if turn["state"] == "active" else " (undone)"
    sealed = " sealed" if turn["sealed"] else ""
    return f"  {turn['turn']:>4}  {turn['createdAt']}  {turn['label']}{state}{sealed}"


def _print_human(command: str, result: dict[str, Any]) -> None:
    if command == "capture":
        print(
            f"Turn {result['turn']} ({result['id']}) in session '{result['session']}'"
            + (" sealed" if result["sealed"] else "")
        )
        for item in result["skipped"]:
            print(f"  skipped {item['path']}: {item['reason']}")
    elif command in ("undo", "redo"):
        print(result["message"])
        for item in result["files"]:
            print(f"  {item['action']:<8} {item['path']}")
        for item in result["kept"]:
            print(f"  kept     {item['path']} ({item['reason']})")
    elif command == "list":
        print(
            f"Session '{result['session']}'  undo: {'yes' if result['canUndo'] else 'no'}"
            f"  redo: {'yes' if result['canRedo'] else 'no'}"
        )
        for turn in result["turns"]:
            print(_turn_line(turn))
        others = [s["id"] for s in result["sessions"] if s["id"] != result["session"]]
        if others:
            print("Other sessions: " + ", ".join(others))
    elif command == "diff":
        for item in result["files"]:
            if item["binary"] or item.get("truncated"):
                kind = "binary" if item["binary"] else "too large to diff"
                print(f"{item['status']} {item['path']} ({kind})")
            elif item["diff"]:
                print(item["diff"], end="" if item["diff"].endswith("\n") else "\n")
            else:
                print(f"{item['status']} {item['path']}")
    else:
        print(result["message"])


def run_command(args: argparse.Namespace) -> dict[str, Any]:
    if args.command == "capture":
        return _capture(args)
    from .engine import Engine

    engine = Engine(os.path.abspath(args.workspace))
    try:
        return _dispatch(engine, args)
    finally:
        for message in engine.take_recovered():
            print(f"turnback: {message}", file=sys.stderr)


def _capture(args: argparse.Namespace) -> dict[str, Any]:
    """Through the work tree's daemon when one answers; else in process, then start one."""
    from .daemon.capture import capture

    messages: list[str] = []
    try:
        return capture(
            args.workspace, args.session, args.label, args.phase, _metadata(args.metadata), messages
        )
    finally:
        for message in messages:
            print(f"turnback: {message}", file=sys.stderr)


def _metadata(text: str | None) -> Any:
    if text is None:
        return None
    try:
        metadata = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidParams("metadata", f"is not valid JSON ({error})") from None
    if not isinstance(metadata, dict):
        raise InvalidParams("metadata", "must be a JSON object")
    return metadata


def _dispatch(engine: Any, args: argparse.Namespace) -> dict[str, Any]:
    from .engine import RestoreOptions

    if args.command in ("undo", "redo"):
        if args.count < 1:
            raise InvalidParams("count", "must be >= 1")
        turn: Any = args.turn
        if turn is not None and turn.isdigit():
            turn = int(turn)
        options = RestoreOptions(
            count=args.count, force=args.force, dry_run=args.dry_run, turn=turn
        )
        return getattr(engine, args.command)(args.session, options)
    if args.command == "list":
        return engine.list(args.session, args.limit)
    if args.command == "diff":
        turn: Any = args.turn
        if turn is not None and turn.isdigit():
            turn = int(turn)
        return engine.diff(args.session, turn, args.path, args.context)
    return engine.prune(args.session, args.keep, args.older_than)


def _is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from .lsp.main import serve

        return serve(args.tcp, args.log_file)
    if args.command == "daemon":
        from .daemon.service import run

        return run(args.workspace, args.idle_timeout)
    for stream in (sys.stdout, sys.stderr):  # file names that are not UTF-8 print as bytes
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="surrogateescape")
    try:
        result = run_command(args)
    except TurnbackError as error:
        if args.json:
            print(
                json.dumps(
                    {"error": {"code": error.code, "message": error.message, "data": error.data}}
                )
            )
        else:
            print(f"turnback: {error.message}", file=sys.stderr)
        codes = {INVALID_PARAMS: EXIT_USAGE, REQUEST_FAILED: EXIT_FAILED}
        return codes.get(error.code, EXIT_INTERNAL if error.code == INTERNAL_ERROR else EXIT_FAILED)
    except Exception as error:  # a bug: say so briefly; the traceback helps no one here
        print(f"turnback: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_INTERNAL
    if args.json:
        text = json.dumps(result, ensure_ascii=False)
        print(text if _is_utf8(text) else json.dumps(result))  # JSON stays valid UTF-8
    else:
        _print_human(args.command, result)
    return EXIT_OK
