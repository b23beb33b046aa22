"""Finds the git repository behind a workspace folder, or makes a shadow one.

A git work tree snapshots into its own object database; its refs are keyed by
work tree, because linked worktrees share the main repository's refs. A plain
folder gets a bare shadow repository in the user's data directory whose work
tree is set in memory only, so no `.git` ever appears in the user's folder.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs
import pygit2
from pygit2.enums import ConfigLevel

from ..errors import NoWorkspace, StorageFailed, UnsupportedRepository
from .configenv import read_config_as_git_does
from .discovery import ceiling_dirs, looked_in
from .diskconfig import configured, disk_overrides, shadow_as_the_folder
from .durability import enable_git_fsync
from .gitpaths import is_utf8
from .locking import repository_lock
from .memory import bound_libgit2_memory
from .objectwrites import written
from .ownership import give_back, give_back_objects, owner_to_give_to
from .pygit2_internals import add_config_file, set_workdir, use_empty_index
from .sharedperms import share_folder_tree, share_object_folders, shared_folder_bits

#: Overrides the per-user data directory (tests, portable installs).
DATA_DIR_ENV = "TURNBACK_DATA_DIR"
REF_ROOT = "refs/turnback"


def data_dir() -> Path:
    return Path(os.environ.get(DATA_DIR_ENV) or platformdirs.user_data_dir("turnback"))


@dataclass
class WorkspaceRepo:
    """An open repository and where turnback keeps its private state for one work tree."""

    root: Path
    repo: pygit2.Repository
    shadow: bool
    worktree_key: str
    state_dir: Path
    lock_path: Path
    user_index_path: Path | None
    #: When `settle_permissions` last began (ns): object folders unchanged since are done.
    objects_settled_ns: int = field(default=0, repr=False)
    #: The same for a shared repository's object files: those older than this process
    #: were settled by the process that wrote them.
    shared_settled_ns: int = field(default_factory=time.time_ns, repr=False)

    @property
    def ref_prefix(self) -> str:
        return f"{REF_ROOT}/{self.worktree_key}"

    def open_again(self) -> pygit2.Repository:
        """A second handle on the same repository and work tree, for a scan thread: its
        own index is empty, as a scan diffs the private index and never needs the user's."""
        repo = pygit2.Repository(self.repo.path)
        read_config_as_git_does(repo)
        self.read_as_the_disk(repo)
        # Opened by its git directory: libgit2 would guess that directory's parent for the
        # work tree (a shadow repository's, or one whose `.git` is a file or a symlink).
        set_workdir(repo, str(self.root))
        use_empty_index(repo)
        return repo

    @functools.cached_property
    def _disk_config(self) -> Path | None:
        """diskconfig.py's file for this work tree (never for a shadow: its config is ours)."""
        return None if self.shadow else disk_overrides(self.repo, self.root, self.state_dir)

    def read_as_the_disk(self, repo: pygit2.Repository) -> None:
        """Makes `repo` (a handle on this repository) compare the work tree as its disk
        is: names' case, exec bits and symlinks (diskconfig.py)."""
        if self._disk_config is not None:
            add_config_file(repo, str(self._disk_config), ConfigLevel.APP)

    @functools.cached_property
    def keeps_exec_bits(self) -> bool:
        """Whether the work tree's disk keeps exec bits (`core.filemode` as diskconfig.py
        reads it): where not, a file keeps the mode it was captured with (rawhash.py)."""
        return configured(self.repo, "core.filemode", True)

    @functools.cached_property
    def shared_bits(self) -> int:
        """What git adds to the object folders of a shared repository (sharedperms.py)."""
        return 0 if self.shadow else shared_folder_bits(self.repo)

    def settle_permissions(self) -> None:
        """After an operation: the object folders this process made get the bits git would
        (sharedperms.py), and what it made in another user's repository, run as root, is
        given to that user (ownership.py)."""
        if self.shadow:
            return  # in this user's own data folder
        common = common_dir(Path(self.repo.path))
        if self.shared_bits:
            began = time.time_ns()
            share_object_folders(self.objects_dir, self.shared_bits, self.shared_settled_ns)
            self.shared_settled_ns = began
        for folder in (self.state_dir, common / "refs" / "turnback"):
            share_folder_tree(folder, self.shared_bits)
        owner = owner_to_give_to(common)
        if owner is not None:
            began = time.time_ns()
            give_back_objects(self.objects_dir, owner, self.objects_settled_ns)
            self.objects_settled_ns = began
            # (A linked worktree's state is in its own git directory, its lock in the main one.)
            turnbacks = [self.state_dir, self.lock_path.parent, common / "refs" / "turnback"]
            give_back([*turnbacks, common / "logs" / "refs" / "turnback"], owner)

    @property
    def objects_dir(self) -> Path:
        """Where the repository's objects are written (a linked worktree shares its main's)."""
        return common_dir(Path(self.repo.path)) / "objects"

    def head_commit(self) -> pygit2.Oid | None:
        """The commit HEAD points at, or None on an unborn HEAD or in a shadow repository."""
        if self.shadow or self.repo.head_is_unborn:
            return None
        try:
            return self.repo.head.target
        except pygit2.GitError:
            return None

    def head_name(self) -> str | None:
        if self.shadow or self.repo.head_is_detached:
            return None
        try:
            return self.repo.lookup_reference("HEAD").target  # type: ignore[return-value]
        except (pygit2.GitError, KeyError):
            return None


def _shadow_home(folder: Path) -> Path:
    key = hashlib.sha256(os.fsencode(folder)).hexdigest()[:16]
    return data_dir() / "shadows" / f"{folder.name or 'root'}-{key}"


def _holds_turns(repo: pygit2.Repository) -> bool:
    """Whether `repo` holds any session's turns (of any work tree)."""
    try:
        return any(n.startswith(f"{REF_ROOT}/") and "/sessions/" in n for n in repo.references)
    except pygit2.GitError:
        return False


def _shadow_holds_turns(folder: Path) -> bool:
    """Whether `folder` has a shadow repository holding a session's turns."""
    git_dir = _shadow_home(folder) / "repo.git"
    if not (git_dir / "HEAD").exists():
        return False
    try:
        return _holds_turns(pygit2.Repository(str(git_dir)))
    except pygit2.GitError:
        return False


def _shadow_repo(folder: Path) -> WorkspaceRepo:
    if not is_utf8(str(folder)):  # pygit2 takes a work tree's path as UTF-8 only
        raise NoWorkspace(
            "cannot snapshot a plain folder whose path is not UTF-8 (a git "
            f"repository there would do): {os.fsencode(folder)!r}"
        )
    home = _shadow_home(folder)
    git_dir = home / "repo.git"
    try:
        home.mkdir(parents=True, exist_ok=True)
        with repository_lock(home / "lock"):  # a server and the CLI may create it at once
            if (git_dir / "HEAD").exists():
                repo = pygit2.Repository(str(git_dir))
            else:
                repo = written(lambda: pygit2.init_repository(str(git_dir), bare=True), str(home))
                (home / "workdir").write_text(str(folder) + "\n", errors="surrogateescape")
            shadow_as_the_folder(repo, folder)
            read_config_as_git_does(repo)
    except OSError as error:  # a full disk, a data folder the user may not write
        raise StorageFailed.from_os_error(error) from error
    except pygit2.GitError as error:
        raise StorageFailed(f"Cannot make the shadow repository in {home}: {error}") from error
    # In memory only: the shadow's config never names the folder, the folder never names it.
    repo.workdir = str(folder)
    return WorkspaceRepo(
        root=folder,
        repo=repo,
        shadow=True,
        worktree_key="main",
        state_dir=home,
        lock_path=home / "lock",
        user_index_path=None,
    )


def _refuse_broken_gitfile(path: Path) -> None:
    """Refuses a folder whose nearest `.git` is a file naming no git directory (one that
    was moved): git says it is not a repository, and a shadow repository would give the
    folder a second timeline beside the one its repository holds."""
    for folder in looked_in(path):
        dot_git = folder / ".git"
        if os.path.isdir(dot_git):
            return  # not a repository git can open either: git looks further up too
        if os.path.lexists(dot_git):
            raise NoWorkspace(
                f"{dot_git} names a git directory that cannot be opened "
                "(moved or deleted?); git refuses this folder too"
            )


def common_dir(git_dir: Path) -> Path:
    """Where refs and objects live: a linked worktree's git directory names the main one;
    a work tree made by git's contrib `git-new-workdir` links its `refs` folder there."""
    common = git_dir / "commondir"
    if common.exists():
        return (git_dir / common.read_text().strip()).resolve()
    refs = git_dir / "refs"
    if refs.is_symlink():
        return refs.resolve().parent
    return git_dir


def worktree_key(git_dir: Path, common: Path) -> str:
    """The name of a work tree's refs under `refs/turnback/`: `main` for the repository's
    own, `wt-<name>` for a linked worktree. A name git allows but a ref may not hold (not
    UTF-8, a space, `.lock`), and a `git-new-workdir` work tree (whose git directory is a
    `.git` like any other), get one made from their git directory's path."""
    if git_dir == common:
        return "main"
    name = git_dir.name
    linked = (git_dir / "commondir").exists()
    # (A surrogate-escaped byte fits no ref, and libgit2 is not asked about it.)
    if linked and is_utf8(name) and pygit2.reference_is_valid_name(f"{REF_ROOT}/wt-{name}/x"):
        return f"wt-{name}"
    digest = hashlib.sha1(os.fsencode(git_dir)).hexdigest()[:16]
    return f"wt-dir-{digest}"


def _refuse_object_directory_override(repo: pygit2.Repository) -> None:
    """git reads objects from `GIT_OBJECT_DIRECTORY` when set; libgit2 does not. Captures
    then failed "missing object ... `turnback prune --keep 0`", advice that forgets turns."""
    override = os.environ.get("GIT_OBJECT_DIRECTORY")
    if not override:
        return
    own = common_dir(Path(repo.path)) / "objects"
    if Path(override).resolve() != own.resolve():
        raise UnsupportedRepository(
            f"GIT_OBJECT_DIRECTORY is set ({override}): git reads this repository's objects "
            "from there, and turnback reads them from the repository's own objects folder "
            "only. Unset it for turnback."
        )


def open_workspace(folder: str | os.PathLike[str]) -> WorkspaceRepo:
    """The repository for `folder`: its enclosing git work tree, else a shadow repository."""
    enable_git_fsync()  # before turnback writes any object or ref
    bound_libgit2_memory()  # before turnback reads an object
    path = Path(folder)
    if not path.is_dir():
        raise NoWorkspace(f"Workspace folder does not exist or is not a directory: {path}")
    path = path.resolve()
    try:
        ceiling = ceiling_dirs()
        found = (
            pygit2.discover_repository(str(path), False, ceiling)
            if ceiling
            else pygit2.discover_repository(str(path))
        )
    except pygit2.GitError as error:  # a malformed `.git` file
        raise NoWorkspace(f"Cannot open the git repository of {path}: {error}") from None
    if found is None:
        _refuse_broken_gitfile(path)  # not a plain folder: git itself refuses it
    if found is not None:
        try:
            # Opened from the folder, not from the git directory found: libgit2 takes a git
            # directory's parent for its work tree when no `core.worktree` says otherwise,
            # which is wrong where `.git` is a `gitdir:` file (`--separate-git-dir`) or a
            # symlink, and the workspace would be a folder around the repository.
            repo = pygit2.Repository(str(path))
            read_config_as_git_does(repo)
        except pygit2.GitError as error:  # a broken config, a repository of another user
            raise NoWorkspace(f"Cannot open the git repository of {path}: {error}") from None
        if repo.is_bare:
            raise NoWorkspace(f"{path} is in a bare git repository, which has no work tree")
        _refuse_object_directory_override(repo)
        if (
            repo.workdir
            and _shadow_holds_turns(Path(repo.workdir).resolve())
            and not _holds_turns(repo)
        ):
            # A plain folder that became a repository (an agent's `git init` at its top):
            # its timeline stays in its shadow repository while that holds turns, or the
            # turn that ran `git init` could be neither sealed nor undone. Unless the
            # repository holds turns of its own (an older turnback recorded them there):
            # those are the newer, and hiding them undid the wrong timeline.
            return _shadow_repo(Path(repo.workdir).resolve())
        if repo.workdir:
            git_dir = Path(repo.path).resolve()
            common = common_dir(git_dir)
            ws = WorkspaceRepo(
                root=Path(repo.workdir).resolve(),
                repo=repo,
                shadow=False,
                worktree_key=worktree_key(git_dir, common),
                state_dir=git_dir / "turnback",
                lock_path=common / "turnback" / "lock",
                user_index_path=git_dir / "index",
            )
            ws.read_as_the_disk(repo)
            return ws
    if path == Path(path.anchor):
        # The whole file system (/proc, /sys, every user's files) is no project folder.
        raise NoWorkspace(f"The file system root {path} cannot be a workspace; open a project")
    return _shadow_repo(_plain_folder_root(path))


def _plain_folder_root(path: Path) -> Path:
    """The plain folder `path` belongs to: the nearest of it and the folders above it whose
    shadow holds turns, as git finds a work tree from any folder in it (`turnback undo`
    run in `src/` said "Nothing to undo" and made an empty shadow of its own); else `path`."""
    for folder in (path, *path.parents):
        if folder == Path(folder.anchor):
            break
        if _shadow_holds_turns(folder):
            return folder
    return path
