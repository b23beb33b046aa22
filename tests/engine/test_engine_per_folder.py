"""The server makes one engine per workspace folder; making one holds up no other folder.

In process, on real repositories: making a folder's engine may take a while (opening
the repository, finding its member repositories), and a request for another folder
must not wait behind it; the watch is set up on a thread of its own, which no request
waits for (test_watch_setup.py).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from pygls.uris import from_fs_path

from helpers import make_repo
from turnback.engine import Engine
from turnback.lsp import language_server
from turnback.lsp.language_server import TurnbackServer
from turnback.lsp.server import create_server

WAIT = 20  # seconds; each wait below ends at once when the behaviour holds


class HeldMaking(NamedTuple):
    started: threading.Event  # set when folder `slow`'s engine has begun to be made
    release: threading.Event  # set by the test to let it go on


@pytest.fixture
def held_making(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldMaking]:
    """Folder `slow`'s engine starts being made, then waits until the test lets it go on."""
    slow = str((tmp_path / "slow").resolve())
    started, release = threading.Event(), threading.Event()

    class HeldEngine(Engine):
        def __init__(self, folder: str, *args: Any) -> None:
            if folder == slow:
                started.set()
                release.wait(WAIT)
            super().__init__(folder, *args)

    monkeypatch.setattr(language_server, "Engine", HeldEngine)
    yield HeldMaking(started, release)
    release.set()


def ask_for_engine(server: TurnbackServer, folder: Path, made: list[Engine]) -> threading.Thread:
    """A started thread asking `server` for `folder`'s engine, appended to `made`."""
    asking = threading.Thread(
        target=lambda: made.append(server.engine_for(from_fs_path(str(folder))))
    )
    asking.start()
    return asking


def test_another_folder_is_served_while_one_folder_is_being_made(
    tmp_path: Path, held_making: HeldMaking
) -> None:
    # Fails when one lock covers the making of every folder's engine: the second call
    # waits it out.
    slow, quick = make_repo(tmp_path / "slow"), make_repo(tmp_path / "quick")
    server = create_server()
    made: list[Engine] = []
    setting_up = ask_for_engine(server, slow, made)
    try:
        assert held_making.started.wait(WAIT), "the slow folder's engine was never begun"
        ask_for_engine(server, quick, made).join(WAIT)
        assert [engine.ws.root for engine in made] == [quick.resolve()]
    finally:
        held_making.release.set()
        setting_up.join(WAIT)
    assert [engine.ws.root for engine in made] == [quick.resolve(), slow.resolve()]
    for engine in made:
        engine.close()


def test_requests_for_one_folder_share_the_engine_being_made(
    tmp_path: Path, held_making: HeldMaking
) -> None:
    # Fails when a second request for the folder makes a second engine (two watchers).
    slow = make_repo(tmp_path / "slow")
    server = create_server()
    made: list[Engine] = []
    first = ask_for_engine(server, slow, made)
    assert held_making.started.wait(WAIT)
    second = ask_for_engine(server, slow, made)
    second.join(0.5)  # it waits for the first (never answering before it)
    assert not made
    held_making.release.set()
    for asking in (first, second):
        asking.join(WAIT)
    assert len(made) == 2 and made[0] is made[1]
    assert server.open_engines() == [made[0]]
    made[0].close()


def test_settings_applied_while_a_folder_is_being_made_reach_its_engine(
    tmp_path: Path, held_making: HeldMaking
) -> None:
    # Fails when the engine keeps the settings it was made with: apply_settings only
    # updates the engines already made, and this one was not yet.
    slow = make_repo(tmp_path / "slow")
    server = create_server()
    made: list[Engine] = []
    asking = ask_for_engine(server, slow, made)
    assert held_making.started.wait(WAIT)
    server.apply_settings({"turnback": {"turnsPerSession": 7}})
    held_making.release.set()
    asking.join(WAIT)
    assert made and made[0].settings.turns_per_session == 7
    made[0].close()
