"""The server makes one engine per workspace folder; making one holds up no other folder.

In process, on real repositories: setting up a large folder's watch takes a second or
more, and a request for another folder must not wait behind it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from pygls.uris import from_fs_path

from helpers import make_repo
from turnback.engine import Engine
from turnback.lsp.language_server import TurnbackServer
from turnback.lsp.server import create_server

WAIT = 20  # seconds; each wait below ends at once when the behaviour holds


class HeldWatch(NamedTuple):
    started: threading.Event  # set when folder `slow`'s watch setup has begun
    release: threading.Event  # set by the test to let it go on


@pytest.fixture
def held_watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldWatch]:
    """Folder `slow`'s watch setup starts, then waits until the test lets it go on."""
    slow = str((tmp_path / "slow").resolve())
    started, release = threading.Event(), threading.Event()
    enable = Engine.enable_watcher

    def held(engine: Engine) -> bool:
        if str(engine.ws.root) == slow:
            started.set()
            release.wait(WAIT)
        return enable(engine)

    monkeypatch.setattr(Engine, "enable_watcher", held)
    yield HeldWatch(started, release)
    release.set()


def ask_for_engine(server: TurnbackServer, folder: Path, made: list[Engine]) -> threading.Thread:
    """A started thread asking `server` for `folder`'s engine, appended to `made`."""
    asking = threading.Thread(
        target=lambda: made.append(server.engine_for(from_fs_path(str(folder))))
    )
    asking.start()
    return asking


def test_another_folder_is_served_while_one_folder_sets_up_its_watch(
    tmp_path: Path, held_watch: HeldWatch
) -> None:
    # Fails when one lock covers every folder's setup: the second call waits it out.
    slow, quick = make_repo(tmp_path / "slow"), make_repo(tmp_path / "quick")
    server = create_server()
    made: list[Engine] = []
    setting_up = ask_for_engine(server, slow, made)
    try:
        assert held_watch.started.wait(WAIT), "the slow folder's setup never started"
        ask_for_engine(server, quick, made).join(WAIT)
        assert [engine.ws.root for engine in made] == [quick.resolve()]
    finally:
        held_watch.release.set()
        setting_up.join(WAIT)
    assert [engine.ws.root for engine in made] == [quick.resolve(), slow.resolve()]
    for engine in made:
        engine.close()


def test_requests_for_one_folder_share_the_engine_being_made(
    tmp_path: Path, held_watch: HeldWatch
) -> None:
    # Fails when a second request for the folder makes a second engine (two watchers).
    slow = make_repo(tmp_path / "slow")
    server = create_server()
    made: list[Engine] = []
    first = ask_for_engine(server, slow, made)
    assert held_watch.started.wait(WAIT)
    second = ask_for_engine(server, slow, made)
    second.join(0.5)  # it waits for the first (never answering before it)
    assert not made
    held_watch.release.set()
    for asking in (first, second):
        asking.join(WAIT)
    assert len(made) == 2 and made[0] is made[1]
    assert server.open_engines() == [made[0]]
    made[0].close()


def test_settings_applied_while_a_folder_is_being_made_reach_its_engine(
    tmp_path: Path, held_watch: HeldWatch
) -> None:
    # Fails when the engine keeps the settings it was made with: apply_settings only
    # updates the engines already made, and this one was not yet.
    slow = make_repo(tmp_path / "slow")
    server = create_server()
    made: list[Engine] = []
    asking = ask_for_engine(server, slow, made)
    assert held_watch.started.wait(WAIT)
    server.apply_settings({"turnback": {"turnsPerSession": 7}})
    held_watch.release.set()
    asking.join(WAIT)
    assert made and made[0].settings.turns_per_session == 7
    made[0].close()
