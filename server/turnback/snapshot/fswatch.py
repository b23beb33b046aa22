"""Which paths changed since the last capture, from the kernel (Linux inotify).

Events are queued by the kernel while the writer's system call runs, so draining
the queue when a capture starts sees every change finished before the capture
was asked for: no race with an agent that writes and captures at once. Anything
that could lose an event (queue overflow, a watch limit, a directory moved in
from outside, an error) makes `drain` answer None, and the caller falls back to
a full scan, and so does a `.git` appearing or going (the workspace's repositories
changed). Ignored directories and `.git` are not watched.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import struct
from collections.abc import Callable

from ..core.native import filesystem_type, linux_libc

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ISDIR = 0x40000000
_IN_ONLYDIR = 0x01000000
_IN_DONT_FOLLOW = 0x02000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC
#: The events by which a folder's entries, not its attributes, change.
_STRUCTURE = _IN_CREATE | _IN_DELETE | _IN_MOVED_FROM | _IN_MOVED_TO
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")


log = logging.getLogger(__name__)

#: How to lift the kernel's limit, said once when a watch is refused for it.
LIMIT_HINT = (
    ": the inotify watch limit is reached (raise it: sysctl fs.inotify.max_user_watches=524288)"
)


class GaveWay(Exception):
    """The setup stopped before it watched every directory: a capture asked to go first."""


def available() -> bool:
    """False off Linux and in portable mode: the engine then scans the whole tree."""
    return hasattr(linux_libc(), "inotify_init1")


#: File systems whose files another machine or another view may write, which inotify
#: never hears of: NFS, SMB/CIFS (three magics), 9p (WSL's Windows drives, VM shares),
#: FUSE (sshfs, bindfs, virtiofs, Docker Desktop's shares), AFS, Ceph, Coda. Trusting the
#: watcher there would let a capture miss the user's edit, and an undo restore a stale
#: copy over it: those work trees are scanned whole, as git's fsmonitor refuses them.
REMOTE_FILE_SYSTEMS = frozenset(
    {
        0x6969,
        0x517B,
        0xFF534D42,
        0xFE534D42,
        0x01021997,
        0x65735546,
        0x5346414F,
        0x00C36400,
        0x73757245,
    }
)


def watchable(root: str) -> bool:
    """Whether every change under `root` passes through this kernel (no remote or FUSE
    file system at the root), so that inotify hears of it."""
    return filesystem_type(root) not in REMOTE_FILE_SYSTEMS


class Watcher:
    """Watches every directory under `root` that `skip_dir` does not rule out."""

    def __init__(
        self,
        root: str,
        skip_dir: Callable[[str], bool],
        lister: Callable[[str], list[os.DirEntry[str]]] | None = None,
        give_way: Callable[[], bool] | None = None,
    ) -> None:
        self.root = root.rstrip("/")
        self.skip_dir = skip_dir
        #: Lists a directory by its relative path (the special-file walk's, which keeps
        #: what it read); plain `os.scandir` without it.
        self.lister = lister
        self._libc = linux_libc()
        if self._libc is None:
            raise OSError(errno.ENOSYS, "inotify is not available")
        self.fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self.dirs: dict[int, str] = {}
        self.lost = False
        self.changed: set[str] = set()
        #: Directories inotify refused to watch for want of watches (the limit): while any
        #: is left, every drain says "unknown", and each tries them again.
        self.unwatched: set[str] = set()
        #: Directories this user may not read: no capture can read them either (they are
        #: reported unreadable), so they cost no full scan; each drain tries them again,
        #: and once one can be watched its files count as changed.
        self.denied: set[str] = set()
        #: The queue overflowed: directories made meanwhile may have no watch yet.
        self._overflowed = False
        #: Directories `skip_dir` ruled out, asked again by `watch_again`.
        self.skipped: set[str] = set()
        #: Asked before each directory of the first walk: True stops it (GaveWay).
        self._give_way = give_way
        try:
            self._watch_tree("")
        except BaseException:
            self.close()
            raise
        self._give_way = None

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def _watch(self, rel: str) -> bool:
        full = os.path.join(self.root, rel) if rel else self.root
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(full), _MASK)
        if wd < 0:
            code = ctypes.get_errno()
            if code in (errno.EACCES, errno.EPERM):
                self.denied.add(rel)
            elif code not in (errno.ENOENT, errno.ENOTDIR):
                # ENOSPC (the watch limit), ENOMEM: blind there until a watch takes.
                if not self.unwatched:  # once, not for each of thousands of folders
                    log.warning(
                        "turnback cannot watch %s (%s)%s; captures scan the whole work tree "
                        "until it can",
                        full,
                        os.strerror(code),
                        LIMIT_HINT if code == errno.ENOSPC else "",
                    )
                self.unwatched.add(rel)
            return False
        self.unwatched.discard(rel)
        self.denied.discard(rel)
        self.dirs[wd] = rel
        return True

    def _watch_tree(self, top: str) -> None:
        """Watches `top` and the directories below it; reports files already there."""
        stack = [top]
        while stack:
            if self._give_way is not None and self._give_way():
                raise GaveWay()
            rel = stack.pop()
            if not self._watch(rel):
                continue
            try:
                entries = self._list(rel)
            except OSError:
                continue
            prefix = f"{rel}/" if rel else ""
            if top:  # a directory that appeared: its files are news too
                self._new_entries(prefix, entries)
            # Nearly every entry is a file: the directories are picked out in C.
            for name in [e.name for e in entries if e.is_dir(follow_symlinks=False)]:
                if name == ".git":
                    continue
                if self.skip_dir(prefix + name):
                    self.skipped.add(prefix + name)
                else:
                    stack.append(prefix + name)

    def _list(self, rel: str) -> list[os.DirEntry[str]]:
        if self.lister is not None:
            return self.lister(rel)
        return list(os.scandir(os.path.join(self.root, rel) if rel else self.root))

    def _new_entries(self, prefix: str, entries: list[os.DirEntry[str]]) -> None:
        """The files of a directory that appeared, and whether a repository came with it."""
        for entry in entries:
            if entry.name == ".git":
                self.lost = True  # a repository came with the new directory
            elif not entry.is_dir(follow_symlinks=False):
                self.changed.add(prefix + entry.name)

    def drain(self) -> set[str] | None:
        """Paths changed since the last drain, or None when some change may be unknown."""
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            self._parse(data)
        if self._overflowed:
            # Events were dropped, among them the creation of directories, which then
            # got no watch: every directory is asked again (those watched answer at once).
            self._overflowed = False
            self._watch_tree("")
        for rel in sorted(self.unwatched | self.denied):
            if not os.path.isdir(os.path.join(self.root, rel)):
                self.unwatched.discard(rel)
                self.denied.discard(rel)
            elif self.skip_dir(rel):  # ignored since: never to be watched
                self.unwatched.discard(rel)
                self.denied.discard(rel)
                self.skipped.add(rel)
            else:
                self._watch_tree(rel)
        if self.lost or self.unwatched:
            self.lost = False
            self.changed = set()
            return None
        changed, self.changed = self.changed, set()
        return changed

    def _parse(self, data: bytes) -> None:
        offset = 0
        while offset < len(data):
            wd, mask, _cookie, length = _EVENT.unpack_from(data, offset)
            offset += _EVENT.size
            name = data[offset : offset + length].rstrip(b"\0").decode(errors="surrogateescape")
            offset += length
            if mask & _IN_Q_OVERFLOW:
                self.lost = self._overflowed = True
                continue
            parent = self.dirs.get(wd)
            if mask & _IN_IGNORED:
                self.dirs.pop(wd, None)
                continue
            if parent is None:
                continue
            if mask & (_IN_DELETE_SELF | _IN_MOVE_SELF):
                if not parent:
                    self.lost = True  # the root itself went away or moved
                continue
            if not name or (mask & _IN_ISDIR and not mask & _STRUCTURE):
                # A folder's own mode or times (`touch src`, `chmod`): git keeps neither, and
                # a folder among the changed paths is one made or moved in, whose old files
                # go (all of `src/` was dropped from the snapshot, for an undo to delete).
                continue
            rel = f"{parent}/{name}" if parent else name
            if name == ".git":
                if mask & _STRUCTURE:
                    self.lost = True  # a repository appeared or went: find them again
                continue
            self.changed.add(rel)
            created = mask & _IN_ISDIR and mask & (_IN_CREATE | _IN_MOVED_TO)
            if created and self.skip_dir(rel):
                self.skipped.add(rel)
            elif created:
                self._watch_tree(rel)

    def watch_again(self) -> None:
        """Watches the skipped directories `skip_dir` no longer rules out (an ignore rule
        changed, or a file in one became tracked); their files count as changed."""
        for rel in sorted(self.skipped):
            if not os.path.isdir(os.path.join(self.root, rel)):
                self.skipped.discard(rel)
            elif not self.skip_dir(rel):
                self.skipped.discard(rel)
                self._watch_tree(rel)
