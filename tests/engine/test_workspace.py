"""One turn covers the whole workspace: nested repositories, submodules, folders of them,
through the in-process engine (the CLI, hooks, crash and server tests are in tests/wire/).

Every test compares the bytes on disk and each repository's git state (status, HEAD,
index bytes, refs, stash, config) with what they were.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import git, make_repo, tree_state, write
from helpers.workspace import agent_edits, repo_git_state, two_repo_folder
from turnback.config import Settings
from turnback.engine import Engine, RestoreOptions
from turnback.errors import Conflict
from turnback.snapshot import fswatch
from turnback.wire import to_wire


# Ensures a submodule whose folder holds files but no repository (its .git removed, as a
# vendoring agent does) is reported `submodule` in every capture: git lists nothing below a
# gitlink, so its files are neither captured nor undone, and they were left out unreported.
def test_submodule_folder_without_a_repository_is_reported(tmp_path: Path):
    lib = make_repo(tmp_path / "lib-origin", {"lib.py": "lib v1\n"})
    root = make_repo(tmp_path / "app", {"app.py": "app v1\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(root, "commit", "-qm", "add lib")
    (root / "lib/.git").unlink()  # a `gitdir:` file into .git/modules: the repository is gone
    engine = Engine(str(root))
    try:
        turn = to_wire(engine.capture(label="t"))
        write(root, "lib/lib.py", "lib v2 by the agent\n")
        sealed = to_wire(engine.capture(phase="after"))
        undone = to_wire(engine.undo())
    finally:
        engine.close()
    for captured in (turn, sealed):
        assert {"path": "lib", "reason": "submodule"} in captured["skipped"]
    assert undone["files"] == [] and (root / "lib/lib.py").read_text() == "lib v2 by the agent\n"


# Ensures a submodule's work-tree files (added from a local path) are captured and undone,
# and neither repository's HEAD, index or submodule commit moves.
def test_submodule_files_are_undone(tmp_path: Path):
    lib = make_repo(tmp_path / "lib-origin", {"lib.py": "lib v1\n"})
    root = make_repo(tmp_path / "app", {"app.py": "app v1\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(root, "commit", "-qm", "add lib")
    before = tree_state(root)
    states = {p: repo_git_state(p) for p in (root, root / "lib")}
    engine = Engine(str(root))
    turn = to_wire(engine.capture(label="t"))
    assert turn["repositories"][0]["path"] == "lib"
    assert all(s["reason"] != "submodule" for s in turn["skipped"])
    write(root, "lib/lib.py", "lib v2 by the agent\n")
    write(root, "lib/extra.py", "new\n")
    write(root, "app.py", "app v2\n")
    result = to_wire(engine.undo())
    assert {f["path"] for f in result["files"]} == {"lib/lib.py", "lib/extra.py", "app.py"}
    assert tree_state(root) == before
    assert {p: repo_git_state(p) for p in (root, root / "lib")} == states


# Ensures a member whose files the turn all deleted stays a member (a scan does not list an
# empty folder): undo puts its files back and redo deletes them again (found by the model).
def test_member_emptied_by_the_turn_is_redone(tmp_path: Path):
    root = make_repo(tmp_path / "app", {"a.txt": "a\n"})
    make_repo(root / "sub", {"s.txt": "s\n", "e/t.txt": "t\n"})
    engine = Engine(str(root))
    engine.capture(session="main")
    (root / "sub/s.txt").unlink()
    engine.capture(session="main")
    (root / "sub/e/t.txt").unlink()
    emptied = tree_state(root)
    undone = to_wire(engine.undo(session="main"))
    assert [f["path"] for f in undone["files"]] == ["sub/e/t.txt"]
    redone = to_wire(engine.redo(session="main"))
    assert [(f["path"], f["action"]) for f in redone["files"]] == [("sub/e/t.txt", "deleted")]
    assert tree_state(root) == emptied


# Ensures a nested repository its parent ignores is no part of the turn and never touched.
def test_ignored_nested_repository_is_untouched(tmp_path: Path):
    root = make_repo(tmp_path / "app", {"app.py": "v1\n", ".gitignore": "vendor/\n"})
    vendored = make_repo(root / "vendor/dep", {"dep.py": "dep v1\n"})
    engine = Engine(str(root))
    turn = to_wire(engine.capture(label="t"))
    assert "repositories" not in turn
    write(root, "vendor/dep/dep.py", "dep edited\n")
    write(root, "app.py", "v2\n")
    dep_state = repo_git_state(vendored)
    result = to_wire(engine.undo())
    assert [f["path"] for f in result["files"]] == ["app.py"]
    assert (root / "vendor/dep/dep.py").read_text() == "dep edited\n"
    assert repo_git_state(vendored) == dep_state


# Ensures a repository the turn created (with a commit) is left whole and reported in
# `kept`, while the rest of the turn is undone.
def test_repository_created_during_the_turn_is_kept(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    engine = Engine(str(ws))
    engine.capture(label="t")
    write(ws, "notes.md", "notes v2\n")
    fresh = make_repo(ws / "fresh", {"a.txt": "a\n", "sub/b.txt": "b\n"})
    write(ws, "fresh/untracked.txt", "u\n")
    engine.capture(phase="after")
    made, fresh_git = tree_state(fresh), repo_git_state(fresh)
    result = to_wire(engine.undo())
    assert {"path": "fresh", "reason": "repositoryCreated"} in result["kept"]
    assert [f["path"] for f in result["files"]] == ["notes.md"]
    assert (ws / "notes.md").read_text() == "notes v1\n"
    assert tree_state(fresh) == made and repo_git_state(fresh) == fresh_git
    assert any(c["change"] == "created" for c in result["repositoryChanges"])


# Ensures a repository deleted during the turn gets its work-tree files back, the undo
# says by name that its .git is not turnback's to bring back (it may have been moved),
# and the rest of the turn is undone.
def test_repository_deleted_during_the_turn(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    before = tree_state(ws)
    engine = Engine(str(ws))
    engine.capture(label="t")
    engine.unpacking.wait()  # the user's rm -rf would race its loose writes, as git gc's
    shutil.rmtree(ws / "api")
    write(ws, "web/index.js", "web v2\n")
    result = to_wire(engine.undo())
    assert tree_state(ws) == before  # every file, api's included (its .git is not a file)
    assert not (ws / "api/.git").exists()
    notes = {c["path"]: c for c in result["repositoryChanges"]}
    assert notes["api"]["change"] == "deleted"
    assert "api" in result["message"] and "not turnback's to bring back" in result["message"]


# Ensures a user edit in one repository after a sealed turn refuses the whole undo, with a
# conflict naming the file, and nothing anywhere changes.
def test_user_edit_in_one_repository_refuses_the_whole_undo(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    engine = Engine(str(ws))
    engine.capture(label="t")
    agent_edits(ws)
    engine.capture(phase="after")
    write(ws, "web/new.js", "the user's edit\n")
    state = tree_state(ws)
    with pytest.raises(Conflict) as refused:
        engine.undo()
    assert refused.value.details["files"] == ["web/new.js"]
    assert tree_state(ws) == state
    forced = to_wire(engine.undo(options=RestoreOptions(force=True)))
    assert (ws / "api/main.py").read_text() == "api v1\n" and forced["turnsUndone"] == 1
    engine.redo(options=RestoreOptions(force=True))
    assert (ws / "web/new.js").read_text() == "the user's edit\n"  # redo brings it back


# Ensures an agent commit inside a nested repository: undo restores the files, leaves that
# repository's HEAD, branch and index alone, and says its HEAD moved.
def test_agent_commit_inside_a_nested_repository(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    before = tree_state(ws)
    engine = Engine(str(ws))
    engine.capture(label="t")
    write(ws, "api/main.py", "api v2\n")
    git(ws / "api", "commit", "-qam", "agent commit")
    api_state = repo_git_state(ws / "api")
    result = to_wire(engine.undo())
    assert tree_state(ws) == before
    assert repo_git_state(ws / "api")["head"] == api_state["head"]
    assert repo_git_state(ws / "api")["index"] == api_state["index"]
    moved = {c["path"]: c for c in result["repositoryChanges"]}["api"]
    assert moved["change"] == "headMoved" and moved["newHead"] == api_state["head"]
    assert "HEAD of api moved" in result["message"]


# Ensures `nestedRepositories: "report"` keeps today's behaviour: reported, not captured.
def test_report_setting_leaves_nested_repositories_out(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    engine = Engine(str(ws), Settings(nested_repositories="report"))
    turn = to_wire(engine.capture(label="t"))
    assert {(s["path"], s["reason"]) for s in turn["skipped"]} == {
        ("api", "nestedRepository"),
        ("web", "nestedRepository"),
    }
    write(ws, "api/main.py", "api v2\n")
    write(ws, "notes.md", "notes v2\n")
    result = to_wire(engine.undo())
    assert [f["path"] for f in result["files"]] == ["notes.md"]
    assert (ws / "api/main.py").read_text() == "api v2\n"


# Ensures repositories past `repositoryLimit` are reported, never captured or touched.
def test_repository_limit_reports_the_rest(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    engine = Engine(str(ws), Settings(repository_limit=1))
    turn = to_wire(engine.capture(label="t"))
    assert [r["path"] for r in turn["repositories"]] == ["api"]
    assert {"path": "web", "reason": "repositoryLimit"} in turn["skipped"]
    write(ws, "api/main.py", "api v2\n")
    write(ws, "web/index.js", "web v2\n")
    engine.undo()
    assert (ws / "api/main.py").read_text() == "api v1\n"
    assert (ws / "web/index.js").read_text() == "web v2\n"


# Ensures the watcher notices a repository appearing (a `.git` created) and the next
# capture covers it, and a member's file changes are seen through the watcher path.
def test_watcher_finds_a_new_repository(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    engine = Engine(str(ws))
    if not engine.enable_watcher():
        pytest.skip("no inotify here")
    try:
        engine.capture(label="t1")
        write(ws, "api/main.py", "api v2\n")
        engine.capture(label="t2")  # through the watcher: only changed paths looked at
        make_repo(ws / "later", {"x.txt": "x\n"})
        turn = to_wire(engine.capture(label="t3"))
        assert [r["path"] for r in turn["repositories"]] == ["api", "later", "web"]
        write(ws, "later/x.txt", "x2\n")
        write(ws, "api/main.py", "api v3\n")
        engine.undo(options=RestoreOptions(count=2))
        assert (ws / "api/main.py").read_text() == "api v2\n"
        assert (ws / "later/x.txt").read_text() == "x2\n"  # t2 knew no `later`: kept
    finally:
        engine.close()


# Ensures an operation on the parent folder holds its member repositories' locks too, so a
# session on a member waits for it.
def test_parent_operation_holds_member_locks(tmp_path: Path):
    from turnback.core.locking import repository_lock
    from turnback.errors import Busy

    ws = two_repo_folder(tmp_path / "ws")
    parent = Engine(str(ws))
    parent.capture(label="t")
    member = Engine(str(ws / "web"))
    with parent.locked(), pytest.raises(Busy), repository_lock(member.ws.lock_path, timeout=0.2):
        pass
    with repository_lock(member.ws.lock_path, timeout=0.2):
        pass  # free again once the parent's operation ended


# Ensures a repository nested in a member repository (three levels) is a member too, and
# one undo restores all three levels.
def test_repository_inside_a_member_repository(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    make_repo(ws / "api/plugins/p", {"plugin.py": "plugin v1\n"})
    before = tree_state(ws)
    engine = Engine(str(ws))
    turn = to_wire(engine.capture(label="t"))
    assert [r["path"] for r in turn["repositories"]] == ["api", "api/plugins/p", "web"]
    write(ws, "api/plugins/p/plugin.py", "plugin v2\n")
    write(ws, "api/main.py", "api v2\n")
    write(ws, "notes.md", "notes v2\n")
    result = to_wire(engine.undo())
    assert sorted(f["path"] for f in result["files"]) == [
        "api/main.py",
        "api/plugins/p/plugin.py",
        "notes.md",
    ]
    assert tree_state(ws) == before


# Ensures a watching engine notices a member's `.git` going away (`rm -rf web`): the next
# capture no longer lists it, and undo puts its files back.
def test_watcher_notices_a_repository_going(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    before = tree_state(ws)
    engine = Engine(str(ws))
    if not engine.enable_watcher():
        pytest.skip("no inotify here")
    try:
        engine.capture(label="t1")
        engine.unpacking.wait()  # the user's rm -rf would race its loose writes, as git gc's
        shutil.rmtree(ws / "web")
        turn = to_wire(engine.capture(label="t2"))
        assert [r["path"] for r in turn["repositories"]] == ["api"]
        result = to_wire(engine.undo(options=RestoreOptions(count=2)))
        assert tree_state(ws) == before
        assert [c["change"] for c in result["repositoryChanges"]] == ["deleted"]
    finally:
        engine.close()


# Ensures a member repository's own ignore rules decide for paths inside it: a file web's
# .gitignore ignores is neither captured nor touched by undo.
def test_member_ignore_rules_apply_inside_it(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    engine = Engine(str(ws))
    engine.capture(label="t")
    write(ws, "web/debug.log", "ignored by web's .gitignore\n")
    write(ws, "web/index.js", "web v2\n")
    engine.capture(phase="after")
    assert [f["path"] for f in to_wire(engine.diff())["files"]] == ["web/index.js"]
    result = to_wire(engine.undo())
    assert [f["path"] for f in result["files"]] == ["web/index.js"]
    assert (ws / "web/debug.log").read_text() == "ignored by web's .gitignore\n"


# Ensures a member repository turnback cannot read (a sparse index) does not fail the
# workspace's capture: it is reported as a nested repository and left alone.
def test_unreadable_member_is_reported_not_fatal(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    git(ws / "web", "config", "index.sparse", "true")
    engine = Engine(str(ws))
    turn = to_wire(engine.capture(label="t"))
    assert [r["path"] for r in turn["repositories"]] == ["api"]
    assert {"path": "web", "reason": "nestedRepository"} in turn["skipped"]
    write(ws, "web/index.js", "web v2\n")
    write(ws, "api/main.py", "api v2\n")
    result = to_wire(engine.undo())
    assert [f["path"] for f in result["files"]] == ["api/main.py"]
    assert (ws / "web/index.js").read_text() == "web v2\n"


# Ensures overlapping workspaces never deadlock: a parent folder and its member `api`
# (which has a submodule, whose lock sorts before api's own) capturing at once, many times.
def test_overlapping_workspaces_capture_at_once(tmp_path: Path):
    import threading

    ws = two_repo_folder(tmp_path / "ws")
    lib = make_repo(tmp_path / "lib-origin", {"lib.py": "lib v1\n"})
    git(ws / "api", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "sub")
    git(ws / "api", "commit", "-qm", "add lib")
    parent, member = Engine(str(ws)), Engine(str(ws / "api"))
    parent.capture(label="warm"), member.capture(label="warm")
    errors: list[BaseException] = []

    def loop(engine: Engine, rel: str) -> None:
        try:
            for n in range(15):
                write(ws, rel, f"{n}\n")
                engine.capture(label=f"t{n}")
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [
        threading.Thread(target=loop, args=(parent, "notes.md")),
        threading.Thread(target=loop, args=(member, "api/sub/lib.py")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads) and not errors, errors


# Ensures files that were in a folder before the turn made it a repository (`git init`
# over the user's docs/) come back with the undo, while the new repository (its .git and
# the files the turn added) stays.
def test_files_from_before_a_repository_was_made_around_them(tmp_path: Path):
    root = make_repo(tmp_path / "app", {"readme.txt": "r\n"})
    write(root, "docs/a.md", "user A\n")
    write(root, "docs/b.md", "user B, precious\n")
    engine = Engine(str(root))
    engine.capture(label="t")
    docs = make_repo(root / "docs")  # the agent's git init and first commit
    write(root, "docs/a.md", "agent rewrote\n")
    (root / "docs/b.md").unlink()
    write(root, "docs/new.md", "agent's\n")
    engine.capture(phase="after")
    result = to_wire(engine.undo())
    assert {"path": "docs", "reason": "repositoryCreated"} in result["kept"]
    assert (root / "docs/a.md").read_text() == "user A\n"
    assert (root / "docs/b.md").read_text() == "user B, precious\n"
    assert (root / "docs/new.md").read_text() == "agent's\n" and (docs / ".git").is_dir()
    engine.close()


# Ensures redoing two turns at once, after undoing one that created a repository (kept by
# that undo) and one that then edited it, sees no change of the user's: the kept file is at
# a state the redo passes through. It used to refuse with a false conflict.
def test_redo_two_turns_over_a_kept_created_repository(tmp_path: Path):
    ws = two_repo_folder(tmp_path / "ws")
    engine = Engine(str(ws))
    engine.capture(label="t1")
    make_repo(ws / "fresh", {"n.txt": "n\n"})
    engine.capture(phase="after")
    engine.capture(label="t2")
    write(ws, "fresh/n.txt", "n, edited in t2\n")
    engine.capture(phase="after")
    engine.undo()
    engine.undo()
    assert (ws / "fresh/n.txt").read_text() == "n\n"  # t1's undo kept what it created
    redone = to_wire(engine.redo(options=RestoreOptions(count=2)))
    assert redone["turnsRedone"] == 2
    assert (ws / "fresh/n.txt").read_text() == "n, edited in t2\n"
    engine.close()


# Ensures a watched plain folder whose subfolder the agent turns into a repository (`git
# init` and a commit: no file of it changes) takes it in as a member at once, so that the
# next turn's edits there are captured and undone. It was found only when a file in it
# changed, after the next turn began: that turn's undo took it for a repository the turn
# had created and kept the turn's edits.
@pytest.mark.skipif(not fswatch.available(), reason="inotify is off here (TURNBACK_PORTABLE=1)")
def test_git_init_in_a_watched_plain_folder(tmp_path: Path):
    ws = tmp_path / "ws"
    write(ws, "plain/p.txt", "p\n")
    engine = Engine(str(ws))
    try:
        assert engine.enable_watcher()
        engine.capture(label="t1")
        git(ws / "plain", "init", "-q")
        git(ws / "plain", "add", "-A")
        git(ws / "plain", "commit", "-q", "-m", "init")
        engine.capture(phase="after")
        engine.capture(label="t2")
        write(ws, "plain/p.txt", "p2\n")
        write(ws, "plain/new.txt", "new\n")
        engine.capture(phase="after")
        result = to_wire(engine.undo())
    finally:
        engine.close()
    assert sorted(f["path"] for f in result["files"]) == ["plain/new.txt", "plain/p.txt"]
    assert (ws / "plain/p.txt").read_text() == "p\n" and not (ws / "plain/new.txt").exists()


# Ensures undoing one turn at a time ends where undoing both at once does when the later
# turn re-created a repository the earlier one deleted: the first undo keeps the new
# repository, and the second took its file for an edit of the user's (a false conflict).
def test_step_by_step_undo_over_a_repository_made_again(tmp_path: Path):
    ws = tmp_path / "ws"
    make_repo(ws / "api", {"a.txt": "orig\n"})
    write(ws, "notes.md", "notes\n")
    engine = Engine(str(ws))
    try:
        engine.capture(label="t1")
        shutil.rmtree(ws / "api")
        engine.capture(phase="after")
        engine.capture(label="t2")
        make_repo(ws / "api", {"a.txt": "new\n"})
        engine.capture(phase="after")
        first = to_wire(engine.undo())
        assert {"path": "api", "reason": "repositoryCreated"} in first["kept"]
        engine.undo()  # a Conflict before
    finally:
        engine.close()
    assert (ws / "api/a.txt").read_text() == "orig\n"
