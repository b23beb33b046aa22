"""The built wheel, installed into a fresh environment, is a working turnback.

The rest of the suite runs the editable checkout; this is what `pipx install` or
`uv tool install` of the published package gives a user.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from helpers import SERVER_ENV, make_repo, write

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str | Path, cwd: Path | None = None, stdin: bytes | None = None):
    return subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=SERVER_ENV,
        input=stdin,
        capture_output=True,
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def installed_turnback(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`turnback` from a wheel built by `python -m build`, in a venv of its own."""
    work = tmp_path_factory.mktemp("wheel")
    built = _run(sys.executable, "-m", "build", "--wheel", "--sdist", "--outdir", work, ROOT)
    assert built.returncode == 0, built.stderr.decode()[-2000:]
    assert b"deprecat" not in (built.stderr + built.stdout).lower()
    wheels = list(work.glob("turnback-*.whl"))
    assert len(wheels) == 1 and list(work.glob("turnback-*.tar.gz"))
    env_dir = work / "env"
    venv.create(env_dir, with_pip=True)
    installed = _run(env_dir / "bin" / "python", "-m", "pip", "install", "-q", wheels[0])
    assert installed.returncode == 0, installed.stderr.decode()[-2000:]
    return env_dir / "bin" / "turnback"


def test_wheel_captures_and_undoes(installed_turnback: Path, tmp_path: Path):
    # A capture, an agent's edit and an undo through the installed command restore the file.
    repo = make_repo(tmp_path / "repo")
    assert _run(installed_turnback, "capture", "--label", "t1", cwd=repo).returncode == 0
    write(repo, "src/app.py", "print('agent')\n")
    undone = _run(installed_turnback, "undo", "--json", cwd=repo)
    assert undone.returncode == 0, undone.stderr.decode()
    assert [f["path"] for f in json.loads(undone.stdout)["files"]] == ["src/app.py"]
    assert (repo / "src/app.py").read_text() == "print('v1')\n"


def test_wheel_serves_initialize(installed_turnback: Path, tmp_path: Path):
    # `turnback serve` from the wheel answers initialize over stdio and exits on shutdown/exit.
    repo = make_repo(tmp_path / "repo")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": repo.as_uri(), "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]  # fmt: skip
    stream = b""
    for message in messages:
        body = json.dumps(message).encode()
        stream += b"Content-Length: %d\r\n\r\n" % len(body) + body
    served = _run(installed_turnback, "serve", stdin=stream)
    assert served.returncode == 0, served.stderr.decode()[-2000:]
    assert b'"serverInfo"' in served.stdout and b'"name": "turnback"' in served.stdout.replace(
        b'"name":"turnback"', b'"name": "turnback"'
    )
