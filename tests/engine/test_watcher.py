"""The watcher's captures must equal full scans: same tree, whatever changed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pygit2
import pytest

from helpers import GIT_ENV, git, make_repo, python_as_user, write
from turnback.config import Settings
from turnback.engine import Engine
from turnback.snapshot import fswatch
from turnback.snapshot.scanner import Scanner

pytestmark = pytest.mark.skipif(
    not fswatch.available(), reason="inotify is off here (not Linux, or TURNBACK_PORTABLE=1)"
)


def snapshot_tree(engine: Engine, session: str) -> str:
    turn = engine.store.load(session).turns[-1]  # type: ignore[union-attr]
    return str(engine.repo[pygit2.Oid(hex=turn.before)].tree_id)


def both(watched: Engine, scanned: Engine) -> tuple[str, str]:
    watched.capture(session="watched")
    scanned.capture(session="scanned")
    return snapshot_tree(watched, "watched"), snapshot_tree(scanned, "scanned")


# Ensures every kind of change seen through inotify gives the tree a full scan gives.
def test_watched_captures_equal_full_scans(tmp_path: Path):
    repo = make_repo(
        tmp_path / "repo",
        {"a.txt": "a\n", "src/b.py": "b\n", "src/deep/c.py": "c\n", ".gitignore": "*.log\n"},
    )
    watched = Engine(str(repo))
    assert watched.enable_watcher()
    scanned = Engine(str(repo))
    assert len(set(both(watched, scanned))) == 1  # the first capture is a full scan anyway

    steps = [
        lambda: os.utime(repo / "src"),  # a folder's times and mode: no change of content
        lambda: os.chmod(repo / "src" / "deep", 0o700),
        lambda: write(repo, "a.txt", "edited\n"),
        lambda: write(repo, "new/dir/tree/x.txt", "created in new directories\n"),
        lambda: (repo / "src/b.py").unlink(),
        lambda: shutil.rmtree(repo / "src/deep"),
        lambda: os.rename(repo / "new", repo / "moved"),
        lambda: os.chmod(repo / "a.txt", 0o755),
        lambda: os.symlink("a.txt", repo / "link"),
        lambda: write(repo, "noise.log", "ignored\n"),
        lambda: (repo / "src").rmdir(),
        lambda: write(repo, "src", "a file where a directory was\n"),
        lambda: git(repo, "add", "moved"),  # the user's index changes: tracked set differs
        lambda: write(repo, "moved/dir/tree/x.txt", "x" * 10),  # same second, same size
    ]
    for number, step in enumerate(steps, 1):
        step()
        tree_watched, tree_scanned = both(watched, scanned)
        assert tree_watched == tree_scanned, f"step {number} differs"
    watched.close()


# Ensures an ignore rule changed outside the work tree (core.excludesFile, which no event
# reports) makes the watcher's next capture drop what the rule now ignores, as a full scan does.
def test_a_global_ignore_rule_reaches_the_watched_capture(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    excludes = tmp_path / "excludes"
    excludes.write_text("")
    git(repo, "config", "core.excludesFile", str(excludes))
    write(repo, "notes.tmp", "untracked, captured until ignored\n")
    watched = Engine(str(repo))
    assert watched.enable_watcher()
    scanned = Engine(str(repo))
    both(watched, scanned)
    excludes.write_text("*.tmp\n")
    tree_watched, tree_scanned = both(watched, scanned)
    assert tree_watched == tree_scanned
    assert "notes.tmp" not in watched.repo[pygit2.Oid(hex=tree_watched)]  # type: ignore[operator]
    watched.close()


# Ensures the listings the watcher reads as it sets up serve the first full scan's
# special-file walk (it lists only what changed since), and a FIFO made in between is
# still reported.
@pytest.mark.usefixtures("listings_trusted_at_once")  # utime moves the ctimes to now
def test_the_watch_setup_listings_miss_nothing_made_after_them(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "src/b.py": "b\n", "docs/c.md": "c\n"})
    for directory in (repo, repo / "src", repo / "docs"):  # out of the racy window
        st = directory.stat()
        os.utime(directory, ns=(st.st_atime_ns, st.st_mtime_ns - 60_000_000_000))
    engine = Engine(str(repo))
    assert engine.enable_watcher()
    os.mkfifo(repo / "src" / "pipe")
    turn = engine.capture(session="s")
    assert [(s.path, s.reason) for s in turn.skipped] == [("src/pipe", "specialFile")]
    walks = engine.scanner.root._special_files  # type: ignore[attr-defined]
    assert walks.relisted == 1  # src only: the root and docs were trusted from the watcher's
    engine.close()


# Ensures edits of tracked files inside ignored directories reach the watcher's captures,
# also for a file tracked only after the watch was set up (found in review: unwatched,
# their edits waited for the next full scan).
def test_tracked_files_in_ignored_directories_are_watched(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", ".gitignore": "build/\nout/\n"})
    write(repo, "build/keep.txt", "v1\n")
    git(repo, "add", "-f", "build/keep.txt")
    git(repo, "commit", "-qm", "a tracked file in an ignored directory")
    write(repo, "out/deep/later.txt", "v1\n")
    watched = Engine(str(repo))
    assert watched.enable_watcher()
    scanned = Engine(str(repo))
    both(watched, scanned)
    steps = [
        lambda: write(repo, "build/keep.txt", "v2\n"),
        lambda: git(repo, "add", "-f", "out/deep/later.txt"),
        lambda: write(repo, "out/deep/later.txt", "v2\n"),
    ]
    for number, step in enumerate(steps, 1):
        step()
        tree_watched, tree_scanned = both(watched, scanned)
        assert tree_watched == tree_scanned, f"step {number} differs"
    tree = watched.repo[pygit2.Oid(hex=tree_watched)]
    assert watched.repo[tree["out/deep/later.txt"].id].data == b"v2\n"  # type: ignore[index]
    watched.close()


# Ensures a directory a .gitignore edit stops ignoring is watched from then on (found in
# the eighth session: it stayed skipped, and its edits waited for the next full scan).
def test_a_directory_no_longer_ignored_is_watched(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", ".gitignore": "gen/\n"})
    write(repo, "gen/out.txt", "ignored at first\n")
    watched = Engine(str(repo))
    assert watched.enable_watcher()
    scanned = Engine(str(repo))
    assert len(set(both(watched, scanned))) == 1
    write(repo, ".gitignore", "*.log\n")  # gen/ counts from now on
    assert len(set(both(watched, scanned))) == 1
    write(repo, "gen/out.txt", "edited once gen/ counts\n")
    tree_watched, tree_scanned = both(watched, scanned)
    assert tree_watched == tree_scanned
    tree = watched.repo[pygit2.Oid(hex=tree_watched)]
    assert watched.repo[tree["gen/out.txt"].id].data == b"edited once gen/ counts\n"
    watched.close()


# Ensures a queue overflow (or any lost event) makes the next capture a full scan.
def test_lost_events_fall_back_to_full_scan(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    engine = Engine(str(repo))
    engine.enable_watcher()
    engine.capture(session="s")
    write(repo, "a.txt", "changed while events were lost\n")
    engine.watcher.drain()  # type: ignore[union-attr]  # the event is consumed...
    engine.watcher.lost = True  # type: ignore[union-attr]  # ...and the queue overflowed
    engine.capture(session="s")
    tree = engine.repo[pygit2.Oid(hex=engine.store.load("s").turns[-1].before)].tree  # type: ignore[union-attr]
    assert engine.repo[tree["a.txt"].id].data == b"changed while events were lost\n"
    engine.close()


# Ensures a file turnback hashed keeps its stat data in the scan cache (no rehash next time).
def test_hashed_files_keep_their_stat_data(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    engine = Engine(str(repo))
    engine.capture(session="s")
    write(repo, "a.txt", "changed by the agent\n")
    write(repo, "new.txt", "untracked and new\n")
    for name in ("a.txt", "new.txt"):  # not racily clean: written well before the scan
        os.utime(
            repo / name, (os.stat(repo / name).st_atime - 10, os.stat(repo / name).st_mtime - 10)
        )
    engine.capture(session="s")
    private = repo / ".git" / "turnback" / "index"
    debug = subprocess.run(
        ["git", "ls-files", "--debug", "a.txt", "new.txt"],
        cwd=repo,
        env={**GIT_ENV, "GIT_INDEX_FILE": str(private)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sizes = [int(line.split()[1]) for line in debug.splitlines() if "size:" in line]
    assert sizes == [len("changed by the agent\n"), len("untracked and new\n")], debug


# Ensures a git command that rewrites the user's index but tracks the same files (git
# status refreshing stat data, git add of a tracked file, git commit) keeps the watcher's
# path, and one that changes what is tracked takes a full scan; both equal full scans.
def test_index_rewrites_that_keep_tracking_need_no_full_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    repo = make_repo(
        tmp_path / "repo", {"a.txt": "a\n", "src/b.py": "b\n", ".gitignore": "*.log\n"}
    )
    full_scans: list[int] = []
    original = Scanner._capture
    monkeypatch.setattr(
        Scanner,
        "_capture",
        lambda self, *args: full_scans.append(id(self)) or original(self, *args),
    )
    watched = Engine(str(repo))
    assert watched.enable_watcher()
    scanned = Engine(str(repo))
    both(watched, scanned)
    watched_scanner = watched.scanner.root

    def refresh_stat_data() -> None:
        os.utime(repo / "src/b.py")  # content unchanged, stat changed
        write(repo, "a.txt", "edited\n")
        git(repo, "update-index", "-q", "--refresh")

    steps = [
        ("git status", refresh_stat_data, False),
        ("git add of a tracked file", lambda: git(repo, "add", "a.txt"), False),
        ("git commit", lambda: git(repo, "commit", "-qm", "c"), False),
        ("git add -f of an ignored file", lambda: _add_ignored(repo), True),
        ("git rm --cached", lambda: git(repo, "rm", "-q", "--cached", "kept.log"), True),
    ]
    for name, step, scans in steps:
        step()
        before = full_scans.count(id(watched_scanner))
        tree_watched, tree_scanned = both(watched, scanned)
        assert tree_watched == tree_scanned, name
        assert (full_scans.count(id(watched_scanner)) > before) == scans, name
    tree = watched.repo[pygit2.Oid(hex=tree_watched)]
    assert "kept.log" not in tree  # untracked again, and ignored
    watched.close()


def _add_ignored(repo: Path) -> None:
    write(repo, "kept.log", "tracked though ignored\n")
    git(repo, "add", "-f", "kept.log")


# Ensures a capture whose in-memory scan cache names objects that are gone (turnback's refs
# deleted by hand, then `git gc --prune=now`) starts over from the user's index, watched or
# not: its snapshot holds every file as on disk, none of them a pruned object.
@pytest.mark.parametrize("watching", [True, False], ids=["watched", "full-scan"])
def test_capture_after_its_objects_were_pruned(tmp_path: Path, watching: bool):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "src/b.py": "b\n"})
    engine = Engine(str(repo))
    if watching:
        assert engine.enable_watcher()
    try:
        write(repo, "src/new.py", "only in a snapshot\n")
        engine.capture(session="s")
        refs = git(repo, "for-each-ref", "--format=%(refname)", "refs/turnback/").split()
        for ref in refs:
            git(repo, "update-ref", "-d", ref)
        git(repo, "reflog", "expire", "--expire=now", "--all")
        git(repo, "gc", "-q", "--prune=now")
        write(repo, "a.txt", "a, edited\n")
        engine.capture(session="s")
        tree = engine.repo[pygit2.Oid(hex=snapshot_tree(engine, "s"))]
        files = {path: tree[path].data for path in ("a.txt", "src/b.py", "src/new.py")}
        assert files == {
            "a.txt": b"a, edited\n",
            "src/b.py": b"b\n",
            "src/new.py": b"only in a snapshot\n",
        }
    finally:
        engine.close()


# Ensures a watched capture whose last tree was deleted by hand from `.git/objects` (the
# anchor ref still there) starts over from the user's index instead of failing with an
# internal error: its snapshot holds every file as on disk.
def test_capture_after_its_last_tree_was_deleted_by_hand(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "src/b.py": "b\n"})
    engine = Engine(str(repo))
    assert engine.enable_watcher()
    try:
        write(repo, "src/new.py", "new\n")
        engine.capture(session="s")
        last = engine.repo[pygit2.Oid(hex=snapshot_tree(engine, "s"))]
        for oid in (last.id, last["src"].id):
            hexed = str(oid)
            (repo / ".git" / "objects" / hexed[:2] / hexed[2:]).unlink()
        write(repo, "src/b.py", "b, edited\n")
        engine.capture(session="s")
        tree = engine.repo[pygit2.Oid(hex=snapshot_tree(engine, "s"))]
        files = {path: tree[path].data for path in ("a.txt", "src/b.py", "src/new.py")}
        assert files == {"a.txt": b"a\n", "src/b.py": b"b, edited\n", "src/new.py": b"new\n"}
    finally:
        engine.close()


# Ensures a queue overflow leaves no directory unwatched: those made while events were
# dropped got no watch, so after the full scan that followed, every later edit in them was
# missed (its turn's undo left the agent's bytes, and an older undo called them the user's).
def test_directories_made_during_a_queue_overflow_are_watched(tmp_path: Path):
    queued = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if queued > 100_000:
        pytest.skip(f"a queue of {queued} events takes too long to overflow")
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "burst/keep.txt": "k\n"})
    watched = Engine(str(repo))
    assert watched.enable_watcher()
    scanned = Engine(str(repo))
    assert len(set(both(watched, scanned))) == 1
    burst = repo / "burst"  # watched: each file it gets is two events
    for n in range(queued + 1000):  # an `npm install`: more events than the queue holds
        (burst / f"f{n}").write_bytes(b"")
    write(repo, "newpkg/lib/index.js", "one\n")
    assert len(set(both(watched, scanned))) == 1
    write(repo, "newpkg/lib/index.js", "two\n")
    tree_watched, tree_scanned = both(watched, scanned)
    assert tree_watched == tree_scanned
    watched.close()


# Ensures directories inotify refused to watch (here a watch limit of 10, set in a user
# namespace of the test's own) keep every capture a full scan, and are watched once it can:
# the first capture scanned the whole tree, every later one trusted the partial watcher,
# and the agent's edits in 21 of 30 folders were in no turn.
def test_folders_past_the_watch_limit_are_never_missed(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {f"d{n}/f.txt": "v1\n" for n in range(30)})
    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parents[2] / "server")!r})
with open("/proc/sys/user/max_inotify_watches", "w") as limit:
    limit.write("10")
import pygit2
from turnback.config import Settings
from turnback.engine import Engine
engine = Engine({str(repo)!r})
assert engine.enable_watcher()
for version in ("v2", "v3"):
    engine.capture(session="s")
    for n in range(30):
        with open({str(repo)!r} + f"/d{{n}}/f.txt", "w") as f:
            f.write(version + "\\n")
    engine.capture(session="s")
    turn = engine.store.load("s").turns[-1]
    tree = engine.repo[pygit2.Oid(hex=turn.before)].tree
    data = [engine.repo[tree[f"d{{n}}/f.txt"].id].data for n in range(30)]
    stale = [n for n in range(30) if data[n] != (version + "\\n").encode()]
    assert stale == [], stale
print("ok")
"""
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", sys.executable, "-c", script],
        env=GIT_ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "unshare" in done.stderr and done.returncode != 0 and "ok" not in done.stdout:
        pytest.skip(f"no user namespace here: {done.stderr.strip()}")
    assert done.stdout.strip() == "ok", done.stderr


# Ensures untracked folders excluded by name (node_modules) take no inotify watch, while
# one holding a tracked file does, and a settings change that stops excluding them has
# them watched: 3,500 folders of an unignored node_modules took 3,500 of the user's watches.
def test_excluded_folders_take_no_watch(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n", "pkgs/node_modules/kept/i.js": "1\n"})
    for n in range(20):
        write(repo, f"node_modules/dep{n}/lib/index.js", "dep\n")
    watched = Engine(str(repo))
    assert watched.enable_watcher()
    scanned = Engine(str(repo))
    assert len(set(both(watched, scanned))) == 1
    dirs = set(watched.watcher.dirs.values())  # type: ignore[union-attr]
    assert not any(d.split("/")[0] == "node_modules" for d in dirs)
    assert "pkgs/node_modules/kept" in dirs
    write(repo, "pkgs/node_modules/kept/i.js", "2\n")
    assert len(set(both(watched, scanned))) == 1
    watched.settings = scanned.settings = Settings(excluded_directories=())
    assert len(set(both(watched, scanned))) == 1  # (a full scan: the settings changed)
    assert "node_modules/dep3/lib" in set(watched.watcher.dirs.values())  # type: ignore[union-attr]
    write(repo, "node_modules/dep3/lib/index.js", "edited\n")
    assert len(set(both(watched, scanned))) == 1
    watched.close()


# Ensures a watcher capture still reports what the work tree holds but snapshots leave out
# (a large file), as a full scan does: it reported only what changed, so a turn's "before"
# capture said nothing of the user's 200-byte `data.bin` (over the limit here), and once the
# agent ran `git add -A && git commit`, the undo deleted it as the turn's new file.
def test_a_watcher_capture_reports_what_stays_left_out(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    write(repo, "data.bin", b"x" * 200)
    settings = Settings(untracked_file_size_limit=100)
    watched = Engine(str(repo), settings)
    assert watched.enable_watcher()
    scanned = Engine(str(repo), settings)
    watched.capture(session="s", label="warm-up")
    turn = watched.capture(session="s", label="the agent's turn")
    assert [s.path for s in turn.skipped] == [s.path for s in scanned.capture().skipped]
    assert "data.bin" in [s.path for s in turn.skipped]
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the agent commits everything")
    watched.capture(session="s", phase="after")
    watched.undo("s")
    assert (repo / "data.bin").read_bytes() == b"x" * 200
    watched.close()


# Ensures a folder the user may not read (a container's volume, mode 700, another user's)
# costs no full scan at every capture, as no capture can read it anyway; and once it may be
# read, it is watched and its files captured: after a watch was refused for it, every
# capture of a server or daemon scanned the whole tree, for as long as it ran.
def test_a_folder_that_may_not_be_read_costs_no_full_scans(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    write(repo, "locked/secret.txt", "theirs\n")
    os.chmod(repo / "locked", 0)
    script = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).parents[2] / "server")!r})
import pygit2
from turnback.engine import Engine
engine = Engine({str(repo)!r})
assert engine.enable_watcher()
engine.capture(session="s")
with open({str(repo / "a.txt")!r}, "w") as f:
    f.write("edited\\n")
assert engine.watcher.drain() == {{"a.txt"}}, "a full scan for a folder no capture can read"
os.chmod({str(repo / "locked")!r}, 0o755)  # readable now: watched, and its files captured
engine.capture(session="s")
with open({str(repo / "locked/secret.txt")!r}, "w") as f:
    f.write("edited in the folder\\n")
engine.capture(session="s")
turn = engine.store.load("s").turns[-1]
tree = engine.repo[pygit2.Oid(hex=turn.before)].tree
assert engine.repo[tree["locked/secret.txt"].id].data == b"edited in the folder\\n"
print("ok")
"""
    try:
        done = python_as_user(script)
    finally:
        os.chmod(repo / "locked", 0o755)
    assert done.stdout.strip() == "ok", done.stderr


# Ensures a folder left out whole (node_modules) that appeared after the watcher's last
# full scan is named by the watcher's capture, so an undo of a turn that moved it keeps its
# files: the watcher never lists its files, and the undo deleted them as the turn's.
def test_a_left_out_folder_made_after_the_last_full_scan_is_kept(tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    engine = Engine(str(repo))
    assert engine.enable_watcher()
    engine.capture(label="turn 1")
    engine.capture(phase="after")  # the watcher's path from here on
    write(repo, "node_modules/pkg/index.js", "the user's package\n")
    before = engine.capture(label="turn 2")
    assert [(s.path, s.reason) for s in before.skipped] == [("node_modules", "excludedDirectory")]
    os.rename(repo / "node_modules", repo / "vendor")  # the agent
    engine.capture(phase="after")
    engine.undo()
    assert (repo / "vendor" / "pkg" / "index.js").read_text() == "the user's package\n"
    engine.close()
