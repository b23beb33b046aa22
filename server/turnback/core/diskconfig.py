"""What the work tree's file system really does, where a repository's config says otherwise.

libgit2 compares the work tree with an index as `core.ignorecase`, `core.filemode`,
`core.symlinks`, `core.trustctime` and `core.ignoreStat` say, and a config can be wrong
for the disk under it: a repository copied from macOS to Linux keeps `ignorecase = true`
(an untracked `Makefile` beside a tracked `makefile` was in no snapshot), and many users
set `filemode = false` on disks that keep exec bits (an agent's `chmod -x` was no change,
and a deleted script came back without its exec bit). Or it trades safety for speed:
`trustctime = false` hid a same-size edit that kept its mtime (`cp -p` from a backup), and
the undo of the next turn put an older version over it. turnback's handles on such a
repository read the first three as the disk has them and the two stat settings as git's
defaults, from a config file of turnback's own added to each handle (pygit2_internals);
the user's config is never written. A plain folder's shadow gets them in its own config
(repository.py). The probes write only in turnback's state folder, except a plain
folder's exec-bit probe on a file system that may drop them (a hidden folder made and
removed at once, where turnback has no state folder of its own).

A disk that keeps no exec bits (FAT, exFAT, WSL's Windows drives: every file reads 0777)
gets `filemode = false`, as `git init` gives it: otherwise each file a turn changed was
captured executable, the undo could not clear the bit, and the redo took the file for the
user's edit.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

import pygit2

from .native import filesystem_type
from .worktree import folds_case

#: statfs(2) magic numbers of Linux file systems that keep a file's exec bits as set (ext2-4,
#: XFS, Btrfs, tmpfs, overlayfs, ZFS, F2FS, NFS, ramfs): no probe there. Elsewhere (FAT,
#: exFAT, NTFS, FUSE, 9p, SMB) a probe asks the disk; off Linux the config is believed.
KEEPS_EXEC_BITS = frozenset(
    {
        0xEF53,  # ext2, ext3, ext4
        0x58465342,  # XFS
        0x9123683E,  # Btrfs
        0x01021994,  # tmpfs
        0x794C7630,  # overlayfs
        0x2FC12FC1,  # ZFS
        0xF2F52010,  # F2FS
        0x6969,  # NFS
        0x858458F6,  # ramfs
    }
)
#: The shadow's own key saying its folder's exec bits were probed (the probe writes there).
PROBED_KEY = "turnback.execbitsprobed"


#: git's defaults for the stat settings, which turnback always reads. Stat data is only a
#: shortcut: a same-size edit that kept its mtime (`cp -p`, `tar x`) changes the ctime
#: alone, so that is trusted whatever the config says, and no file is assumed unchanged.
STAT_DEFAULTS = {"trustctime": True, "ignorestat": False}


def stat_defaults(source: pygit2.Repository | pygit2.Config) -> dict[str, bool]:
    """The stat settings `source`'s config says otherwise than git's defaults, set back."""
    return {
        key: value
        for key, value in STAT_DEFAULTS.items()
        if configured(source, f"core.{key}", value) != value
    }


def may_drop_exec_bits(folder: Path) -> bool:
    """Whether `folder`'s file system is one that may give every file the same bits."""
    kind = filesystem_type(str(folder))
    return kind is not None and kind not in KEEPS_EXEC_BITS


def configured(source: pygit2.Repository | pygit2.Config, key: str, default: bool) -> bool:
    config = source.config if isinstance(source, pygit2.Repository) else source
    try:
        return config.get_bool(key)
    except (KeyError, pygit2.GitError):
        return default


def shadow_as_the_folder(repo: pygit2.Repository, folder: Path) -> None:
    """A plain folder's shadow gets `core.ignorecase` and `core.filemode` as the folder's
    file system has them, not as the data folder's, where libgit2 made the shadow: on a
    case-insensitive folder (WSL's Windows drives, a share) an agent's `mv Foo.c foo.c` was
    captured as two files, one file on disk, and the undo deleted `foo.c`, which was
    `Foo.c`."""
    # Through the shadow's own file alone: a handle's config writes to whichever file
    # libgit2 ranks first, which may be one added for git's environment (configenv.py).
    own = pygit2.Config(os.path.join(repo.path, "config"))
    folds = folds_case(folder)
    if configured(repo, "core.ignorecase", False) != folds:
        own["core.ignorecase"] = folds
    for key, value in STAT_DEFAULTS.items():  # said here: a global config may differ
        if configured(own, f"core.{key}", not value) != value:
            own[f"core.{key}"] = value
    if configured(repo, PROBED_KEY, False) or not may_drop_exec_bits(folder):
        return
    try:
        keeps = keeps_exec_bits(folder)
    except OSError:
        return  # a folder it may not write: believed to keep them, probed again next time
    own["core.filemode"] = keeps
    own[PROBED_KEY] = True


def keeps_exec_bits(folder: Path) -> bool:
    """Whether a file made in `folder` keeps an exec bit set and cleared (FAT, exFAT and
    WSL's Windows drives give every file the same bits)."""
    with tempfile.TemporaryDirectory(dir=folder, prefix=".probe-") as scratch:
        probe = Path(scratch) / "mode"
        probe.write_bytes(b"")
        os.chmod(probe, 0o755)
        executable = bool(os.stat(probe).st_mode & stat.S_IXUSR)
        os.chmod(probe, 0o644)
        return executable and not os.stat(probe).st_mode & stat.S_IXUSR


def keeps_symlinks(folder: Path) -> bool:
    with tempfile.TemporaryDirectory(dir=folder, prefix=".probe-") as scratch:
        link = Path(scratch) / "link"
        try:
            os.symlink("target", link)
        except (OSError, NotImplementedError):
            return False
        return link.is_symlink()


def disk_overrides(repo: pygit2.Repository, root: Path, state_dir: Path) -> Path | None:
    """A config file holding what the disk does where `repo`'s config disagrees, or None."""
    wanted = stat_defaults(repo)
    folds = folds_case(root)
    if configured(repo, "core.ignorecase", False) != folds:
        wanted["ignorecase"] = folds
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        filemode = configured(repo, "core.filemode", True)
        if not filemode and keeps_exec_bits(state_dir):
            wanted["filemode"] = True
        elif filemode and may_drop_exec_bits(root) and not keeps_exec_bits(state_dir):
            wanted["filemode"] = False  # a repository copied onto a USB stick, say
        if not configured(repo, "core.symlinks", True) and keeps_symlinks(state_dir):
            wanted["symlinks"] = True
        if not wanted:
            return None
        settings = sorted(wanted.items())
        text = "[core]\n" + "".join(f"\t{key} = {str(on).lower()}\n" for key, on in settings)
        override = state_dir / "disk.config"
        with contextlib.suppress(OSError):
            if override.read_text() == text:
                return override
        staged = state_dir / f"disk.config.{os.getpid()}.tmp"
        staged.write_text(text)
        os.replace(staged, override)
        return override
    except OSError:
        return None  # (a repository turnback may not write: its refs fail first, in words)
