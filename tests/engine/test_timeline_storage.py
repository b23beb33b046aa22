"""Timeline storage (format 2): older timelines (format 1, one timeline.json) still load,
what a turn writes does not grow with the session, and gc keeps exactly what a timeline uses."""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
import pytest

from helpers import git, loose_objects, read, write
from turnback.config import Settings
from turnback.engine import Engine
from turnback.history import timeline_objects
from turnback.history.context import RestoreOptions
from turnback.history.timeline import NewerTimeline, Timeline


def _turn(engine: Engine, repo: Path, n: int) -> None:
    """One agent turn through the engine: capture before, an edit, capture after."""
    engine.capture(label=f"turn {n}", phase="before")
    write(repo, "src/app.py", f"print({n})\n")
    engine.capture(phase="after")


def _write_format_1(engine: Engine, timeline: Timeline) -> None:
    """The session's ref at a timeline commit as turnback wrote it before format 2:
    one timeline.json with every turn, every snapshot a parent."""
    repo = engine.repo
    builder = repo.TreeBuilder()
    data = json.dumps(timeline.to_json(), indent=1).encode()
    builder.insert("timeline.json", repo.create_blob(data), pygit2.GIT_FILEMODE_BLOB)
    parents = list(dict.fromkeys(c for t in timeline.turns for c in t.commits()))
    sig = pygit2.Signature("turnback", "turnback@localhost")
    oid = repo.create_commit(
        None, sig, sig, "turnback timeline\n", builder.write(), [pygit2.Oid(hex=p) for p in parents]
    )
    repo.references.create(engine.store.ref_name(timeline.session), oid, force=True)


# A session written in format 1 (one timeline.json) by an older turnback loads with
# every turn, undoes, and is saved back in format 2 with the same turns.
def test_format_1_timeline_loads_undoes_and_is_rewritten_as_format_2(repo: Path):
    engine = Engine(str(repo))
    for n in (1, 2, 3):
        _turn(engine, repo, n)
    written = engine.store.load("default")
    assert written is not None
    _write_format_1(engine, written)
    legacy = Engine(str(repo))
    loaded = legacy.store.load("default")
    assert loaded is not None and loaded.to_json() == written.to_json()
    assert legacy.undo().count == 1
    assert read(repo, "src/app.py") == "print(2)\n"
    assert git(repo, "ls-tree", "--name-only", "refs/turnback/main/sessions/default").split() == [
        "session.json",
        "turns",
    ]
    after = Engine(str(repo)).store.load("default")
    assert after is not None
    assert [(t.turn, t.state) for t in after.turns] == [(1, "active"), (2, "active"), (3, "undone")]


# What one turn adds to the object database does not grow with the session: the 300th
# turn writes about as many bytes as the 10th (format 1 rewrote every turn: ~25x as many).
def test_a_turn_writes_as_much_at_300_turns_as_at_10(repo: Path):
    engine = Engine(str(repo), Settings(turns_per_session=1000))
    written: dict[int, int] = {}
    for n in range(1, 301):
        engine.unpacking.wait()  # a turn's objects are loose once its pack is unpacked
        seen = loose_objects(repo) if n in (10, 300) else set()
        _turn(engine, repo, n)
        if seen:
            engine.unpacking.wait()
            new = loose_objects(repo) - seen
            written[n] = sum(len(engine.repo.odb.read(pygit2.Oid(hex=o))[1]) for o in new)
    assert written[300] < 2 * written[10], written
    timeline = engine.store.load("default")
    assert timeline is not None and [t.turn for t in timeline.turns] == list(range(1, 301))


# The timeline ref keeps every snapshot its turns use reachable (so `git gc` keeps them)
# and, once turns are pruned, no longer reaches theirs (so `git gc` frees them).
def test_timeline_ref_reaches_exactly_the_kept_turns_snapshots(repo: Path):
    engine = Engine(str(repo), Settings(turns_per_session=1000))
    for n in range(1, 41):
        _turn(engine, repo, n)
    timeline = engine.store.load("default")
    assert timeline is not None
    old, kept = timeline.turns[:30], timeline.turns[30:]
    engine.prune(keep=10)
    reachable = set(git(repo, "rev-list", "refs/turnback/main/sessions/default").split())
    assert {c for t in kept for c in t.commits()} <= reachable
    assert not {c for t in old for c in t.commits()} & reachable


# The default session is the one captured into last, and sessions_state names every
# session with its update time, from the headers alone, in format 2 and in format 1.
def test_default_session_and_sessions_state_come_from_the_headers(repo: Path):
    engine = Engine(str(repo))
    engine.capture(session="a", label="a1")
    engine.capture(session="b", label="b1")
    assert engine.store.default_session() == "b"
    engine.capture(session="a", label="a2")
    assert engine.store.default_session() == "a"

    timelines = {t.session: t for t in engine.store.all()}
    assert engine.sessions_state() == {s: t.updated_at for s, t in timelines.items()}
    _write_format_1(engine, timelines["a"])
    legacy = Engine(str(repo))
    assert legacy.store.default_session() == "a"
    assert legacy.sessions_state() == engine.sessions_state()

    odd = Timeline.from_json({"session": "odd", "lastCaptureAt": 5, "updatedAt": "z"})
    _write_format_1(engine, odd)  # a header a hand or a bug wrote: not a time, not chosen
    assert Engine(str(repo)).store.default_session() == "a"

    # b's one turn made unreadable: its header still names it, so no turn was read
    turn = engine.repo.revparse_single(engine.store.ref_name("b") + ":turns/0/0/1.json")
    (repo / ".git" / "objects" / str(turn.id)[:2] / str(turn.id)[2:]).unlink()
    unread = Engine(str(repo))
    assert "b" not in {t.session for t in unread.store.all()}
    assert "b" in unread.sessions_state()


# Ensures a list names every session with its turn count from the headers (it read every
# turn of every session: 300 sessions of 100 turns took 1.3 s per list), including a
# header saved before it counted its turns (counted from the turn trees) and format 1.
def test_list_counts_every_sessions_turns_from_the_headers(repo: Path):
    engine = Engine(str(repo))
    for session, turns in (("counted", 3), ("uncounted", 2), ("legacy", 1)):
        for n in range(turns):
            engine.capture(session=session, label=f"{session} {n}")
    uncounted = engine.repo.references[engine.store.ref_name("uncounted")]
    commit = engine.repo[uncounted.target]
    header = json.loads(engine.repo[commit.tree["session.json"].id].data)
    del header["turnCount"]
    builder = engine.repo.TreeBuilder(commit.tree)
    blob = engine.repo.create_blob(json.dumps(header).encode())
    builder.insert("session.json", blob, pygit2.GIT_FILEMODE_BLOB)
    sig = pygit2.Signature("turnback", "turnback@localhost")
    oid = engine.repo.create_commit(
        None, sig, sig, "old header\n", builder.write(), commit.parent_ids
    )
    engine.repo.references.create(uncounted.name, oid, force=True)
    legacy = engine.store.load("legacy")
    assert legacy is not None
    _write_format_1(engine, legacy)
    listed = Engine(str(repo)).list("counted")
    assert sorted((s.id, s.turns) for s in listed.sessions) == [
        ("counted", 3),
        ("legacy", 1),
        ("uncounted", 2),
    ]


# A session a newer turnback wrote (a later format) is left as it is: read as format 2 it
# looked empty, and the next capture saved it back with only the new turn, so its turns and
# their snapshots became unreachable (`git gc` then deleted them). Other sessions work.
def test_a_newer_formats_timeline_is_left_alone(repo: Path):
    engine = Engine(str(repo))
    for n in (1, 2):
        _turn(engine, repo, n)
    ref = engine.store.ref_name("default")
    commit = engine.repo.references[ref].peel(pygit2.Commit)
    header = json.loads(engine.repo[commit.tree["session.json"].id].data)
    builder = engine.repo.TreeBuilder(commit.tree)
    header["version"] = 3
    builder.insert("session.json", engine.repo.create_blob(json.dumps(header)), 0o100644)
    sig = pygit2.Signature("turnback", "turnback@localhost")
    newer = engine.repo.create_commit(None, sig, sig, "v3\n", builder.write(), [commit.id])
    engine.repo.references.create(ref, newer, force=True)
    engine.close()

    fresh = Engine(str(repo))
    for call in (
        lambda: fresh.list("default"),
        lambda: fresh.capture(session="default", label="turn 3"),
        lambda: fresh.undo("default"),
    ):
        with pytest.raises(NewerTimeline, match="newer turnback"):
            call()
    fresh.prune(keep=0)
    assert fresh.repo.references[ref].target == newer
    assert fresh.capture(session="other", label="elsewhere").number == 1


# A save reuses the bucket and group commits of the buckets it did not change (libgit2
# looks up every parent of a commit it makes): after turns, an undo, a prune and a new
# turn, the timeline commit's group commits are exactly those a save from nothing makes.
def test_reused_bucket_commits_are_the_ones_a_full_save_makes(repo: Path):
    engine = Engine(str(repo), Settings(turns_per_session=1000))
    for n in range(1, 71):  # three buckets of 32
        _turn(engine, repo, n)
    engine.undo(options=RestoreOptions(count=2))
    _turn(engine, repo, 71)  # drops the redo stack: turns 69 and 70
    engine.prune(keep=40)  # the first bucket keeps turns 30 and 31 only
    _turn(engine, repo, 72)  # its save changes the last bucket alone
    timeline = engine.store.load("default")
    assert timeline is not None
    commit = engine.repo.revparse_single(engine.store.ref_name("default"))
    fresh, _layout = timeline_objects.write(
        engine.repo,
        timeline.header_json(timeline_objects.FORMAT),
        timeline.turns,
        [r.commit for r in timeline.rescued],
        "fresh\n",
        pygit2.Signature("t", "t@localhost", 0, 0),
        None,
    )
    assert commit.parent_ids == engine.repo[fresh].parent_ids
    groups = [engine.repo[p] for p in commit.parent_ids]
    assert sum(len(g.parent_ids) for g in groups) == 3  # buckets 0-2: turns 30-68, 71, 72
