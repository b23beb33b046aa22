"""The command line's paths and odd input: git-like relative paths, one clear line per error.

Paths given to the CLI are relative to the current directory (or to `-C`), as git's
are. Every bad place or name ends in one line on stderr and exit code 2 (bad input)
or 1 (refused): never "internal error", never a traceback.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SERVER_ENV, cli_json, run_cli, write

EXIT_FAILED, EXIT_USAGE = 1, 2


def _turn_that_edits_app(repo: Path) -> None:
    cli_json(repo, "capture", "--label", "edit app")
    write(repo, "src/app.py", "print('agent')\n")
    write(repo, "README.md", "agent readme\n")


def _diffed(done: subprocess.CompletedProcess) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [line[6:] for line in done.stdout.splitlines() if line.startswith("+++ b/")]


# Ensures `diff --path` from a subdirectory names the file there (src/app.py from src/),
# `..` climbs as in git, `-C` sets where paths start, and an absolute path works too.
def test_diff_path_is_relative_to_the_current_directory(repo: Path):
    _turn_that_edits_app(repo)
    assert _diffed(run_cli(repo / "src", "diff", "--path", "app.py")) == ["src/app.py"]
    assert _diffed(run_cli(repo / "src", "diff", "--path", "../README.md")) == ["README.md"]
    assert _diffed(run_cli(repo / "src", "diff", "--path", ".")) == ["src/app.py"]
    assert _diffed(run_cli(repo, "diff", "-C", "src", "--path", "app.py")) == ["src/app.py"]
    absolute = str(repo / "src" / "app.py")
    assert _diffed(run_cli(repo / "src", "diff", "--path", absolute)) == ["src/app.py"]
    nothing = run_cli(repo / "src", "diff", "--path", "README.md")
    assert nothing.returncode == 0 and nothing.stdout == ""


# Ensures a workspace reached through a symlinked directory still holds its paths.
def test_paths_through_a_symlinked_folder(repo: Path, tmp_path: Path):
    _turn_that_edits_app(repo)
    link = tmp_path / "link"
    link.symlink_to(repo)
    done = run_cli(tmp_path, "diff", "-C", "link/src", "--path", "app.py")
    assert _diffed(done) == ["src/app.py"]


# Ensures a path outside the work tree, given relative to the current directory, is
# refused as bad input naming the path.
def test_path_outside_the_work_tree_is_exit_2(repo: Path):
    _turn_that_edits_app(repo)
    done = run_cli(repo / "src", "diff", "--path", "../../elsewhere.py")
    assert done.returncode == EXIT_USAGE
    assert "outside the workspace" in done.stderr


def _run(cwd: Path, *args: str | bytes, env: dict | None = None) -> tuple[int, str]:
    """The CLI with raw argv (bytes allowed, as a shell passes them); exit code, stderr."""
    argv = [sys.executable, "-m", "turnback", *args]
    done = subprocess.run(
        argv, cwd=cwd, env=env or SERVER_ENV, capture_output=True, timeout=120, check=False
    )
    return done.returncode, done.stderr.decode(errors="replace")


def _one_clear_line(code: int, stderr: str, expected_code: int, words: str) -> None:
    assert code == expected_code, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("turnback"), stderr
    assert "internal error" not in stderr and "Traceback" not in stderr, stderr
    assert words in stderr, stderr


# Ensures bad places for -C get one line: a missing folder and a file are bad input (2),
# the file system root is refused (1) instead of scanning /proc into an internal error.
@pytest.mark.parametrize(
    ("where", "code", "words"),
    [
        ("missing", EXIT_USAGE, "does not exist"),
        ("file", EXIT_USAGE, "is not a directory"),
        ("/", EXIT_FAILED, "file system root"),
    ],
)
def test_bad_workspace_folder(repo: Path, where: str, code: int, words: str):
    folder = {"missing": str(repo / "missing"), "file": str(repo / "README.md")}.get(where, where)
    _one_clear_line(*_run(repo, "capture", "-C", folder), code, words)


# Ensures text that is not UTF-8 (bytes from the shell) in a label, session, metadata or
# turn is bad input naming the option, not an internal error; nothing is captured.
@pytest.mark.parametrize(
    ("args", "option"),
    [
        ((b"capture", b"--label", b"caf\xe9"), "--label"),
        ((b"capture", b"--session", b"\xff"), "--session"),
        ((b"capture", b"--metadata", b'{"a": "\xff"}'), "--metadata"),
        ((b"list", b"--session", b"\xfe"), "--session"),
        ((b"undo", b"--turn", b"\xff"), "--turn"),
        ((b"diff", b"\xff"), "TURN"),
        ((b"rescue", b"\xff"), "ID"),
        ((b"prune", b"--older-than", b"\xff"), "--older-than"),
    ],
)
def test_non_utf8_text_is_exit_2(repo: Path, args: tuple[bytes, ...], option: str):
    _one_clear_line(*_run(repo, *args), EXIT_USAGE, f"Invalid {option}:")
    assert cli_json(repo, "list")["turns"] == []


# Ensures odd but well-formed input is bad input naming the field (exit 2), where each was
# an internal error (exit 3) or stored something no front could send back: NaN in
# metadata, an integer past Python's 4,300 digits, a session whose ref name would pass the
# file name limit, dates past year 9999 in UTC, a turn in superscript digits.
@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("capture", "--metadata", '{"score": NaN}'), "--metadata"),
        (("capture", "--metadata", '{"n": ' + "9" * 5000 + "}"), "--metadata"),
        (("capture", "--session", "\u4e2d" * 30), "--session"),
        (("capture", "--session", "." * 100), "--session"),
        (("prune", "--older-than", "9999-12-31T23:59:59-05:00"), "--older-than"),
        (("prune", "--older-than", "0001-01-01T00:00:00+05:00"), "--older-than"),
        (("diff", "\u00b2"), "TURN"),
        (("undo", "--turn", "\u00b9\u00b2"), "--turn"),
        (("redo", "--turn", "1"), "--turn"),  # active, not undone: it said "Nothing to redo"
        # -n was dropped without a word, and all three turns undone.
        (("undo", "-n", "1", "--turn", "1"), "-n/--count"),
        # A "before" capture ignored it, opening a turn and dropping the redo stack.
        (("capture", "--turn", "1"), "--turn"),
    ],
)
def test_odd_input_is_exit_2(repo: Path, args: tuple[str, ...], option: str):
    if args[0] != "capture":
        cli_json(repo, "capture", "--label", "one")
    _one_clear_line(*_run(repo, *args), EXIT_USAGE, f"Invalid {option}:")


# Ensures errors name the command line's options, not the protocol's parameters: "Invalid
# parameter 'olderThan'", "give keep, olderThan or both", "Retry with force" named nothing
# a user could type.
def test_errors_speak_in_options(repo: Path):
    _one_clear_line(*_run(repo, "prune"), EXIT_USAGE, "give --keep, --older-than or both")
    _one_clear_line(*_run(repo, "prune", "--older-than", "soon"), EXIT_USAGE, "--older-than:")
    cli_json(repo, "capture", "--label", "one")
    write(repo, "README.md", "the agent's\n")
    cli_json(repo, "capture", "--phase", "after")
    write(repo, "README.md", "mine\n")
    _one_clear_line(*_run(repo, "undo"), EXIT_FAILED, "etry with --force")
    done = run_cli(repo, "undo", "--json")  # the protocol's words stay in the JSON
    assert "force" in json.loads(done.stdout)["error"]["message"]


# Ensures `-C DIR` also works before the command, in git's order.
def test_folder_before_the_command(repo: Path, tmp_path: Path):
    cli_json(repo, "capture", "--label", "one")
    done = run_cli(tmp_path, "-C", str(repo), "list", "--json")
    assert done.returncode == 0, done.stderr
    assert '"label": "one"' in done.stdout


# Ensures argparse's own usage errors are one line too, naming the option, exit 2; with
# --json the error object is on stdout, as for every other error (stdout was empty).
def test_usage_errors_are_one_line(repo: Path):
    _one_clear_line(*_run(repo, "undo", "-n", "many"), EXIT_USAGE, "-n/--count")
    _one_clear_line(*_run(repo, "rescue"), EXIT_USAGE, "id")
    done = run_cli(repo, "undo", "--json", "-n", "many")
    error = json.loads(done.stdout)["error"]
    assert done.returncode == EXIT_USAGE and error["code"] == -32602 and "-n" in error["message"]


# Ensures -C resolves `..` after a symlink as `cd` and `git -C` do: `link/..` is the folder
# above the link's target, where turnback once took the folder holding the link (and would
# have undone turns there).
def test_folder_through_a_symlink_then_up(repo: Path, tmp_path: Path):
    cli_json(repo, "capture", "--label", "in the repository")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(repo / "src", elsewhere / "link")
    listing = cli_json(elsewhere, "-C", "link/..", "list")
    assert [t["label"] for t in listing["turns"]] == ["in the repository"]
    assert listing["workTree"] == repo.resolve().as_uri()


# Ensures repositories turnback cannot use are refused in one line (exit 1): a broken git
# config, a bare repository (no work tree), and a data directory that cannot be created.
def test_unusable_repositories_are_refused(tmp_path: Path):
    broken = tmp_path / "broken"
    subprocess.run(["git", "init", "-q", str(broken)], check=True)
    (broken / ".git" / "config").write_text("[core\n")
    _one_clear_line(*_run(tmp_path, "capture", "-C", "broken"), EXIT_FAILED, "config")

    bare = tmp_path / "bare.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    _one_clear_line(*_run(tmp_path, "list", "-C", "bare.git"), EXIT_FAILED, "bare")

    plain = tmp_path / "plain"
    plain.mkdir()
    env = {**SERVER_ENV, "TURNBACK_DATA_DIR": str(tmp_path / "plain-file" / "data")}
    (tmp_path / "plain-file").write_text("a file where the data directory must go\n")
    _one_clear_line(*_run(tmp_path, "capture", "-C", "plain", env=env), EXIT_FAILED, "plain-file")


# Ensures a current directory deleted under the shell is bad input in one line (exit 2).
def test_deleted_current_directory(tmp_path: Path):
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && exec "$0" -m turnback list'
    proc = subprocess.Popen(
        ["sh", "-c", script, sys.executable],
        env=SERVER_ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _out, err = proc.communicate(timeout=60)
    _one_clear_line(proc.returncode, err, EXIT_USAGE, "current directory")
    assert not os.path.exists(gone)


# Ensures `serve` with a bad --tcp or an unwritable --log-file is bad input in one line
# (exit 2), and a port already in use is refused in one line (exit 1), not a traceback.
def test_serve_bad_options(tmp_path: Path):
    for args, words in (
        (("--tcp", "nonsense"), "HOST:PORT"),
        (("--tcp", "localhost:70000"), "HOST:PORT"),
        (("--log-file", str(tmp_path / "missing" / "log.txt")), "log-file"),
    ):
        _one_clear_line(*_run(tmp_path, "serve", *args), EXIT_USAGE, words)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        _one_clear_line(
            *_run(tmp_path, "serve", "--tcp", f"127.0.0.1:{port}"), EXIT_FAILED, "in use"
        )


# Ensures a folder nested deeper than libgit2 walks (100 levels; a deep node_modules) is
# refused at once in one line naming the folder to ignore, where every capture retried
# three times and said "Files kept changing ... try again", for good; and that ignoring
# it lets captures work again.
def test_folders_nested_too_deep_are_named(repo: Path):
    deep = repo / "node_modules" / "/".join(["d"] * 101)
    deep.mkdir(parents=True)
    (deep / "leaf.js").write_text("x\n")
    code, stderr = _run(repo, "capture", "--label", "turn")
    _one_clear_line(code, stderr, EXIT_FAILED, "node_modules")
    assert "kept changing" not in stderr and "100 deep" in stderr
    write(repo, ".gitignore", "node_modules/\n")
    assert cli_json(repo, "capture", "--label", "turn")["turn"] == 1


# Ensures a plain folder whose path is not UTF-8 gets a clear refusal, not an internal error
# on every command (pygit2 takes a work tree's path as UTF-8 only); a git repository there
# works, as the git-safety tests show.
def test_plain_folder_whose_path_is_not_utf8_is_refused_clearly(tmp_path: Path):
    folder = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9")))
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    done = run_cli(folder, "capture", "--label", "turn")
    assert done.returncode == 1, done.stderr  # refused, as a folder that is not one
    assert "not UTF-8" in done.stderr and "Traceback" not in done.stderr
