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
import codecs
import contextlib
import io
import json
import os
import re
import signal
import sys

from . import __version__
from .core.quoting import quoted
from .errors import InvalidParams, Reason, StorageFailed, TurnbackError

TYPE_CHECKING = False  # typing costs a hook's process milliseconds; annotations are strings
if TYPE_CHECKING:
    from typing import Any, NoReturn

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
#: An engine error's reason → the exit code; every other reason (refused) exits 1.
_EXIT_CODES = {Reason.INVALID_PARAMS: EXIT_USAGE, Reason.INTERNAL: EXIT_INTERNAL}
#: Options that carry text into the timeline or a ref name: they must be valid UTF-8.
_TEXT_OPTIONS = {
    "session": "session",
    "label": "label",
    "metadata": "metadata",
    "older_than": "olderThan",
    "turn": "turn",
    "id": "id",
}


class _Parser(argparse.ArgumentParser):
    """argparse with one clear line for bad usage (its usage block buries the error), and
    with `--json` the protocol's error object on stdout too, as for every other error."""

    #: Whether the command line asks for JSON (set before parsing: argparse fails early).
    json_errors = False

    def error(self, message: str) -> NoReturn:
        if _Parser.json_errors:
            from .wire import error_to_wire

            print(json.dumps({"error": error_to_wire(InvalidParams("arguments", message))}))
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _common(session_help: str) -> argparse.ArgumentParser:
    """The options every timeline command takes."""
    common = _Parser(add_help=False)
    common.add_argument("--session", help=session_help)
    common.add_argument("--json", action="store_true", help="print the protocol's JSON result")
    common.add_argument("-C", "--workspace", default=".", help="workspace folder (default: .)")
    return common


def _parser() -> argparse.ArgumentParser:
    # Long but flat: one declaration per option, read top to bottom like `--help` prints.
    common = _common("session name (default: the most recently captured)")

    parser = _Parser(
        prog="turnback",
        description=__doc__.split("\n")[0],
        epilog='Exit codes: 0 done (also "Nothing to undo"), 1 refused, 2 bad input, '
        "3 internal error; each error is one line on stderr.",
    )
    parser.add_argument("--version", action="version", version=f"turnback {__version__}")
    parser.add_argument(
        "-C", dest="folder_first", metavar="DIR", help="run as if started in DIR (as git -C)"
    )
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
    capture.add_argument(
        "--turn", help="with --phase after: seal only this turn (number or id), if newest"
    )

    for name, what in (("undo", "undo the newest turns"), ("redo", "redo undone turns")):
        cmd = sub.add_parser(name, parents=[common], help=what)
        cmd.add_argument("-n", "--count", type=int, help="how many turns (default: 1)")
        cmd.add_argument("--turn", help=f"{name} every turn down/up to this one (number or id)")
        cmd.add_argument("--force", action="store_true", help="overwrite conflicting edits")
        cmd.add_argument("--dry-run", action="store_true", help="say what would change")

    listing = sub.add_parser("list", parents=[common], help="show the timeline")
    listing.add_argument("--limit", type=int)

    diff = sub.add_parser("diff", parents=[common], help="show what a turn changed")
    diff.add_argument("turn", nargs="?", help="turn number or id (default: newest active)")
    diff.add_argument("--path", help="only this file or directory (relative to -C, as in git)")
    diff.add_argument("--context", type=int, default=3)

    hook = sub.add_parser("hook", help="run as an agent harness's hook (reads its JSON on stdin)")
    hook.add_argument(
        "harness", help="claude-code, codex, gemini, opencode, cursor, cline, windsurf"
    )
    hook.add_argument("event", help="the harness's hook event, e.g. UserPromptSubmit")
    hooks = sub.add_parser("hooks", help="install, remove or show turnback's agent hooks")
    hooks.add_argument("action", choices=("install", "uninstall", "status"))
    hooks.add_argument("harness", nargs="?", help="claude-code, codex, gemini, opencode, ...")
    hooks.add_argument("--user", action="store_true", help="the user's config, not the project's")
    hooks.add_argument("-C", "--workspace", default=".", help="project folder (default: .)")

    prune = sub.add_parser(
        "prune",
        parents=[_common("only this session (default: every session)")],
        help="drop old turns and sessions",
    )
    prune.add_argument("--keep", type=int, help="turns to keep per session")
    prune.add_argument("--older-than", help='drop turns older than this ("7d", "12h", a time)')
    prune.add_argument(
        "--rescued", action="store_true", help="prune rescued versions too, by the same rules"
    )

    rescue = sub.add_parser(
        "rescue",
        parents=[_common("the session holding it (default: looked for in every session)")],
        help="put back files a forced undo or redo overwrote",
    )
    rescue.add_argument("id", help="the rescued version's id (see `turnback list`)")
    rescue.add_argument("paths", nargs="*", default=[], metavar="PATH", help="only these files")
    rescue.add_argument("--dry-run", action="store_true", help="say what would change")
    return parser


def _turn_line(turn: dict[str, Any]) -> str:
    state = "" if turn["state"] == "active" else " (undone)"
    progress = turn.get("progress") or ("sealed" if turn["sealed"] else "")
    label = quoted(turn["label"])
    return f"  {turn['turn']:>4}  {turn['createdAt']}  {label}{state} {progress}".rstrip()


def _rescued_line(version: dict[str, Any]) -> str:
    files = version["files"]
    shown = ", ".join(map(quoted, files[:3])) + (
        f" and {len(files) - 3} more" if len(files) > 3 else ""
    )
    when = version["createdAt"] or "(time unknown)"
    return f"  {version['id']}  {when}  {version['reason']}: {shown or '(no files)'}"


def _print_human(command: str, result: dict[str, Any]) -> None:
    if command == "capture":
        print(
            f"Turn {result['turn']} ({result['id']}) in session '{quoted(result['session'])}'"
            + (" sealed" if result["sealed"] else "")
        )
        if result.get("repositories"):
            print("  repositories: " + ", ".join(quoted(r["path"]) for r in result["repositories"]))
        for item in result["skipped"]:
            print(f"  skipped {quoted(item['path'])}: {item['reason']}")
    elif command in ("undo", "redo", "rescue"):
        print(result["message"])
        for item in result["files"]:
            print(f"  {item['action']:<8} {quoted(item['path'])}")
        for item in result["kept"]:
            by = f": {quoted(item['by'])}" if item.get("by") else ""
            print(f"  kept     {quoted(item['path'])} ({item['reason']}{by})")
        for item in result.get("notRestored", []):
            print(f"  gone     {quoted(item['path'])} ({item['reason']}: no snapshot held it)")
        if "agentHint" in result:
            print(result["agentHint"]["message"])
        if "rescued" in result and command != "rescue":
            print(f"Put them back with: turnback rescue {result['rescued']['id']}")
    elif command == "list":
        print(
            f"Session '{quoted(result['session'])}'  undo: {'yes' if result['canUndo'] else 'no'}"
            f"  redo: {'yes' if result['canRedo'] else 'no'}"
        )
        for turn in result["turns"]:
            print(_turn_line(turn))
        if result.get("running"):
            run = result["running"]
            print(
                f"Turn {run['turn']} is running ({run['harness']} session "
                f"{run['harnessSession']}, last change {run['secondsSinceChange']:.0f} s ago)"
            )
        if result.get("runningElsewhere"):
            run = result["runningElsewhere"]
            print(
                f"Turn {run['turn']} of session '{quoted(run['session'])}' is running in this "
                f"work tree ({run['harness']} session {run['harnessSession']}, last change "
                f"{run['secondsSinceChange']:.0f} s ago): undo and redo here wait for it"
            )
        if result["rescued"]:
            print("Rescued versions (put back with `turnback rescue ID [PATH...]`):")
            for version in result["rescued"]:
                print(_rescued_line(version))
        others = [quoted(s["id"]) for s in result["sessions"] if s["id"] != result["session"]]
        if others:
            print("Other sessions: " + ", ".join(others))
    elif command == "diff":
        for item in result["files"]:
            name = quoted(item["path"])
            if item.get("oldPath"):  # a rename: both names, as git's `rename from/to`
                name = f"{quoted(item['oldPath'])} -> {name}"
            if "oldMode" in item:
                name += f" (mode {item['oldMode']} -> {item['newMode']})"
            if item["binary"] or item.get("truncated"):
                kind = "binary" if item["binary"] else "too large to diff"
                print(f"{item['status']} {name} ({kind})")
            elif item["diff"]:
                if item.get("oldPath") or "oldMode" in item:
                    print(f"{item['status']} {name}")
                print(item["diff"], end="" if item["diff"].endswith("\n") else "\n")
            else:
                print(f"{item['status']} {name}")
    else:
        print(result["message"])


def _env_settings() -> Any:
    """Settings from `TURNBACK_SETTINGS` (the JSON an editor would send), else the defaults."""
    from .config import Settings, settings_from_env

    return settings_from_env(_warn) or Settings()


def _warn(message: str) -> None:
    print(f"turnback: {message}", file=sys.stderr)


def _workspace(args: argparse.Namespace) -> str:
    """The -C folder as an absolute path, resolved as `cd` would (`link/..` is the folder
    above the link's target, as for git -C); bad input is InvalidParams (exit 2)."""
    try:
        folder = os.path.realpath(args.workspace)
    except FileNotFoundError:  # the shell's current directory was deleted
        raise InvalidParams("workspace", "the current directory no longer exists") from None
    if not os.path.isdir(folder):
        what = "does not exist" if not os.path.lexists(folder) else "is not a directory"
        raise InvalidParams("workspace", f"{args.workspace} {what}")
    return folder


def _check_text(args: argparse.Namespace) -> None:
    """Text that would go into the timeline or a ref must be UTF-8; paths need not be."""
    for attribute, field in _TEXT_OPTIONS.items():
        value = getattr(args, attribute, None)
        try:
            value.encode() if isinstance(value, str) else None
        except UnicodeEncodeError:  # bytes the shell passed that were not UTF-8
            raise InvalidParams(field, "is not valid UTF-8") from None


def from_here(folder: str, path: str) -> str:
    """A path argument as git reads one: relative to the -C folder (the current directory).

    The result is absolute, with its directories resolved as the engine resolves the work
    tree's root, so that a folder reached through a symlink still lies inside it. The
    last component is kept as given: a symlink there is a file of the work tree.
    """
    if path.startswith("file://"):
        return path
    full = os.path.normpath(os.path.join(folder, path))
    head, tail = os.path.split(full)
    return os.path.join(os.path.realpath(head), tail)


def run_command(args: argparse.Namespace) -> dict[str, Any]:
    folder = _workspace(args)
    _check_text(args)
    if args.command == "capture":
        return _capture(args, folder)
    from .engine import Engine

    engine = Engine(folder, _env_settings())
    try:
        from .wire import to_wire

        return to_wire(_dispatch(engine, args, folder))
    finally:
        _say(engine.take_recovered())


def _capture(args: argparse.Namespace, folder: str) -> dict[str, Any]:
    """Through the work tree's daemon when one answers; else in process, then start one."""
    from .daemon.capture import capture

    if args.turn is not None and args.phase != "after":
        raise InvalidParams("turn", "--turn names the turn to seal: it goes with --phase after")
    messages: list[str] = []
    try:
        return capture(
            folder,
            args.session,
            args.label,
            args.phase,
            _metadata(args.metadata),
            messages,
            turn=_turn_arg(args.turn),
            warn=_warn,
        )
    finally:
        _say(messages)


def _say(messages: list[str]) -> None:
    """Notes for people beside a command's answer: a stderr closed under it (a pipe whose
    reader left) must not turn a command that worked into a failure."""
    with contextlib.suppress(OSError):
        for message in messages:
            print(f"turnback: {message}", file=sys.stderr)


#: The protocol's parameter names as this command line spells them.
FLAGS = {
    "count": "-n/--count",
    "workspace": "-C",
    "olderThan": "--older-than",
    "keep": "--keep",
    "turn": "--turn",
    "session": "--session",
    "label": "--label",
    "metadata": "--metadata",
    "context": "--context",
    "path": "--path",
    "limit": "--limit",
    "phase": "--phase",
    "rescued": "--rescued",
    "id": "ID",
    "paths": "PATH",
}
_PHRASES = {
    "give keep, olderThan or both": "give --keep, --older-than or both",
    "etry with force": "etry with --force",
    'capture with phase "before" first': "run `turnback capture` first",
    "(force: true)": "(--force)",
    "cannot be a workspace; open a project": "cannot be a workspace; run turnback in a project "
    "folder (or -C DIR)",
}


#: Parameters a command takes as a positional argument rather than as an option.
_POSITIONAL = {"diff": {"turn": "TURN"}}


def in_flags(message: str, command: str = "") -> str:
    """An engine message (the protocol's words) as the command line says it: its options,
    not the parameters' names ("Invalid --older-than", "retry with --force")."""
    flags = {**FLAGS, **_POSITIONAL.get(command, {})}
    message = re.sub(
        r"Invalid parameter '(\w+)'",
        lambda m: f"Invalid {flags.get(m.group(1), repr(m.group(1)))}",
        message,
    )
    for said, meant in _PHRASES.items():
        message = message.replace(said, meant)
    return message


def _metadata(text: str | None) -> Any:
    if text is None:
        return None
    try:
        metadata = json.loads(text)
    except ValueError as error:  # not JSON, or an integer past Python's 4,300 digits
        raise InvalidParams("metadata", f"is not valid JSON ({error})") from None
    except RecursionError:  # nested past the parser's recursion limit: far past the limit
        from .history.metadata import MAX_METADATA_DEPTH

        raise InvalidParams(
            "metadata", f"must nest at most {MAX_METADATA_DEPTH} levels deep"
        ) from None
    if not isinstance(metadata, dict):
        raise InvalidParams("metadata", "must be a JSON object")
    return metadata


def _turn_arg(text: str | None) -> int | str | None:
    """A turn number (ASCII digits, shorter than an id) or an id, as the user typed it."""
    if text is not None and text.isascii() and text.isdigit() and len(text) < 16:
        return int(text)
    return text


def _dispatch(engine: Any, args: argparse.Namespace, folder: str) -> dict[str, Any]:
    from .engine import RestoreOptions

    if args.command in ("undo", "redo"):
        if args.count is not None and args.turn is not None:
            raise InvalidParams("count", "give -n or --turn, not both")
        count = 1 if args.count is None else args.count
        if count < 1:
            raise InvalidParams("count", "must be >= 1")
        options = RestoreOptions(
            count=count, force=args.force, dry_run=args.dry_run, turn=_turn_arg(args.turn)
        )
        return getattr(engine, args.command)(args.session, options)
    if args.command == "list":
        return engine.list(args.session, args.limit)
    if args.command == "diff":
        turn = _turn_arg(args.turn)
        path = from_here(folder, args.path) if args.path is not None else None
        return engine.diff(args.session, turn, path, args.context)
    if args.command == "rescue":
        paths = [from_here(folder, p) for p in args.paths] or None
        options = RestoreOptions(dry_run=args.dry_run)
        return engine.rescue(args.session, args.id, paths, options)
    return engine.prune(args.session, args.keep, args.older_than, args.rescued)


def _is_utf8(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _printable(error: UnicodeError) -> tuple[str | bytes, int]:
    """Output that the terminal's encoding cannot hold: a file name's bytes that are not
    UTF-8 go out as they are on disk (surrogateescape); any other character the encoding
    lacks (a cp1252 or ASCII console) becomes `?`. An undo that printed `☕` to such a
    console had undone the turn, then failed with a traceback and exit 1 ("refused")."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    if all(0xDC80 <= ord(c) <= 0xDCFF for c in text):
        return bytes(ord(c) - 0xDC00 for c in text), error.end
    return "?" * len(text), error.end


_PRINTABLE = "turnback-printable"
codecs.register_error(_PRINTABLE, _printable)


#: Interrupted by Ctrl-C, SIGTERM or a closed terminal (128 + SIGINT, as shells say).
EXIT_INTERRUPTED = 130


def _interrupt_on_hangup() -> None:
    """SIGTERM and SIGHUP (a terminal closed) interrupt as Ctrl-C does, so that a restore
    under way rolls back rather than stopping half done."""

    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    for name in ("SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None and signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, interrupt)  # (`nohup` sets SIGHUP ignored: left so)


def _ignore_interrupts() -> None:
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        number = getattr(signal, name, None)
        if number is not None:
            signal.signal(number, signal.SIG_IGN)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if sys.stderr is None:  # started with stderr closed (`2>&-`): print() would use stdout,
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115  (and spoil `--json` output there)
    if argv[:1] == ["-C"] and argv[2:3] == ["hook"]:
        # `turnback -C DIR hook ...`: the payload names the folder; DIR is the fallback.
        with contextlib.suppress(OSError):
            os.chdir(argv[1])
        argv = argv[2:]
    if argv[:1] == ["hook"] and "-h" not in argv and "--help" not in argv:
        from .hooks.runner import run_hook  # before argparse: a hook exits 0 on every path

        return run_hook(argv[1:])
    _Parser.json_errors = "--json" in argv
    args = _parser().parse_args(argv)
    if args.folder_first is not None and getattr(args, "workspace", ".") == ".":
        args.workspace = args.folder_first  # `turnback -C DIR list`, in git's order
    if args.command == "hooks":
        from .hooks.command import hooks_command

        return hooks_command(args.action, args.harness, args.user, args.workspace)
    if args.command == "serve":
        from .lsp.main import serve

        return serve(args.tcp, args.log_file)
    if args.command == "daemon":
        from .daemon.service import run

        return run(args.workspace, args.idle_timeout)
    for stream in (sys.stdout, sys.stderr):  # file names that are not UTF-8 print as bytes
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors=_PRINTABLE)
    _interrupt_on_hangup()
    try:
        try:
            result = run_command(args)
        except OSError as error:  # the file system refused (permissions, a full disk, ...)
            raise StorageFailed.from_os_error(error) from error
        # Done: a Ctrl-C now would only break the answer, or the cache save the process
        # ends with (a traceback, or a failing exit for a turn that was recorded).
        _ignore_interrupts()
    except KeyboardInterrupt:
        # What was under way is whole again (a restore rolls back) or recovered next time,
        # unless it passed its commit point: then it is done, and saying "interrupted" alone
        # made a user run the undo again, undoing a second turn.
        _ignore_interrupts()
        from .history import commitpoint

        done = commitpoint.landed()
        with contextlib.suppress(OSError):
            if done is None:
                print("turnback: interrupted", file=sys.stderr)
            else:
                print(
                    f"turnback: interrupted once the {done} was done: it stands "
                    "(`turnback list` shows it)",
                    file=sys.stderr,
                )
        return EXIT_INTERRUPTED if done is None else EXIT_OK
    except TurnbackError as error:
        if args.json:
            from .wire import error_to_wire

            print(json.dumps({"error": error_to_wire(error)}))
        # One line for people, always, in the command line's own words.
        print(f"turnback: {in_flags(error.message, args.command)}", file=sys.stderr)
        if isinstance(getattr(error.__cause__, "cause", None), KeyboardInterrupt):
            return EXIT_INTERRUPTED  # a restore interrupted midway, and rolled back
        return _EXIT_CODES.get(error.reason, EXIT_FAILED)
    except Exception as error:  # a bug: say so briefly; the traceback helps no one here
        print(f"turnback: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_INTERNAL
    if sys.stdout is None:
        return EXIT_OK  # started with stdout closed (`>&-`): done, nothing to say
    try:
        if args.json:
            text = json.dumps(result, ensure_ascii=False)
            # JSON stays valid and whole: escaped where it is not UTF-8, or where the
            # output's encoding is not UTF-8 (a character it lacks would print as `?`).
            utf8_out = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
            print(text if _is_utf8(text) and utf8_out == "utf8" else json.dumps(result))
        else:
            _print_human(args.command, result)
        sys.stdout.flush()
    except OSError as error:
        # The reader left (`turnback undo | head -1`) or the output is full: the command is
        # done (exit 0 says so), and the interpreter's own last flush must not fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        if not isinstance(error, BrokenPipeError):
            print(f"turnback: done, but its output could not be written: {error}", file=sys.stderr)
    return EXIT_OK
