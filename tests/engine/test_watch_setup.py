"""A server's watch is set up on a thread of its own, and a capture asked meanwhile goes first.

In process, on real repositories: the setup's directory listings are held at chosen
points (through the scanner's `list_directory`, which the setup lists with) until the
engine has a capture waiting, or is closing, so each ordering is forced, not timed.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pygit2
import pytest

from helpers import make_repo, wait_for, write
from turnback.engine import Engine
from turnback.snapshot import fswatch
from turnback.snapshot.scanner import Scanner

pytestmark = pytest.mark.skipif(
    not fswatch.available(), reason="inotify is off here (not Linux, or TURNBACK_PORTABLE=1)"
)

WAIT = 20  # seconds; each wait below ends at once when the behaviour holds


def capture_waiting(engine: Engine) -> bool:
    return engine._watch_setup._captures > 0  # white box: the count the setup gives way to


class Listings:
    """Every directory the setups listed; the root's listings numbered in `hold` (from 1)
    wait until `until(engine)` holds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, hold: set[int], until) -> None:
        self.listed: list[str] = []
        self.held = threading.Event()  # set when a listing is first held
        self.engine: Engine | None = None
        original = Scanner.list_directory

        def listing(scanner: Scanner, rel_dir: str):
            self.listed.append(rel_dir)
            if rel_dir == "" and self.listed.count("") in hold:
                self.held.set()
                wait_for(lambda: until(self.engine), WAIT, "the engine to get there")
            return original(scanner, rel_dir)

        monkeypatch.setattr(Scanner, "list_directory", listing)

    def roots(self) -> int:
        return self.listed.count("")


def many_dirs(root: Path) -> Path:
    return make_repo(root, {f"d{n}/f.txt": f"{n}\n" for n in range(12)})


def file_in_turn(engine: Engine, rel: str) -> bytes:
    turn = engine.store.load(engine.resolve_session(None)).turns[-1]  # type: ignore[union-attr]
    tree = engine.repo[pygit2.Oid(hex=turn.before)].peel(pygit2.Tree)
    return engine.repo[tree[rel].id].data


# Fails when the capture waits for the setup: the root would be listed once, not twice.
def test_a_capture_asked_while_the_watch_sets_up_goes_first(tmp_path, monkeypatch):
    repo = many_dirs(tmp_path / "repo")
    listings = Listings(monkeypatch, hold={1}, until=capture_waiting)
    engine = listings.engine = Engine(str(repo))
    try:
        write(repo, "d3/new.txt", "written before the capture\n")
        engine.start_watching()
        assert listings.held.wait(WAIT), "the setup never listed the root"
        engine.capture(label="first")  # the setup, held at the root, sees it waiting
        assert file_in_turn(engine, "d3/new.txt") == b"written before the capture\n"
        engine._watch_setup.wait()
        assert listings.roots() == 2  # it stopped, then started again after the capture
        assert engine.watcher is not None
        write(repo, "d5/f.txt", "edited once it watched\n")
        engine.capture(label="second")
        engine.capture(label="third")  # the watcher's path, after the full scan above
        assert file_in_turn(engine, "d5/f.txt") == b"edited once it watched\n"
    finally:
        engine.close()


# Fails when every capture stops the setup: a third setup would list the root again.
def test_the_setup_gives_way_only_once(tmp_path, monkeypatch):
    repo = many_dirs(tmp_path / "repo")
    listings = Listings(monkeypatch, hold={1, 2}, until=capture_waiting)
    engine = listings.engine = Engine(str(repo))
    try:
        engine.start_watching()
        assert listings.held.wait(WAIT), "the setup never listed the root"
        engine.capture(label="first")  # stops the first setup
        wait_for(lambda: listings.roots() == 2, WAIT, "a second setup")  # held at the root
        engine.capture(label="second")  # waits for the second setup, which goes on
        assert engine.watcher is not None  # set up before this capture ran
        engine._watch_setup.wait()
        assert listings.roots() == 2
    finally:
        engine.close()


# Fails when closing waits for the whole setup: every directory would be listed.
def test_closing_stops_a_setup_under_way(tmp_path, monkeypatch):
    repo = many_dirs(tmp_path / "repo")
    listings = Listings(monkeypatch, hold={1}, until=lambda e: e._watch_setup._closing)
    engine = listings.engine = Engine(str(repo))
    engine.start_watching()
    assert listings.held.wait(WAIT)
    engine.close()
    assert listings.listed == [""]  # not one directory after the root
    assert engine.watcher is None
    assert not engine._watch_setup._thread.is_alive()  # type: ignore[union-attr]
