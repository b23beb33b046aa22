"""A case-insensitive, case-preserving view of a folder (FUSE, through fusepy), as macOS,
Windows, WSL's Windows drives and many shares have it; like macOS, it also takes a name's
Unicode normalization forms (NFC, NFD) for one. `python casefs.py BACKING MOUNT` serves
BACKING at MOUNT until unmounted (`fusermount -u MOUNT`); with `--inode-per-name`, each
spelling of a name gets an inode of its own, as exFAT through FUSE gives them. Tests only."""

from __future__ import annotations

import errno
import os
import sys
import unicodedata
import zlib

from fuse import FUSE, FuseOSError, Operations


def _fold(name: str) -> str:
    return unicodedata.normalize("NFC", name).lower()


class CaseInsensitive(Operations):
    def __init__(self, root: str, inode_per_name: bool = False) -> None:
        self.root = root
        self.inode_per_name = inode_per_name

    def _full(self, path: str) -> str:
        """The backing path `path` names, each part matched regardless of letter case."""
        current = self.root
        for part in [p for p in path.split("/") if p]:
            exact = os.path.join(current, part)
            if not os.path.lexists(exact):
                try:
                    names = os.listdir(current)
                except OSError:
                    names = []
                found = next((n for n in names if _fold(n) == _fold(part)), None)
                exact = os.path.join(current, found) if found else exact
            current = exact
        return current

    def getattr(self, path, fh=None):
        st = os.lstat(self._full(path))
        keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_ino")
        times = ("st_atime", "st_mtime", "st_ctime")
        found = {k: getattr(st, k) for k in keys + times}
        if self.inode_per_name and path != "/":
            found["st_ino"] = zlib.crc32(path.encode(errors="surrogateescape")) or 1
        return found

    def access(self, path, mode):
        if not os.access(self._full(path), mode):
            raise FuseOSError(errno.EACCES)

    def readdir(self, path, fh):
        return [".", "..", *os.listdir(self._full(path))]

    def mkdir(self, path, mode):
        if os.path.lexists(self._full(path)):
            raise FuseOSError(errno.EEXIST)
        os.mkdir(self._full(path), mode)

    def rename(self, old, new):
        source, target = self._full(old), self._full(new)
        if os.path.lexists(target) and os.path.samefile(source, target):
            target = os.path.join(os.path.dirname(source), os.path.basename(new))
        os.rename(source, target)  # a case-only rename changes the name's case

    def create(self, path, mode, fi=None):
        return os.open(self._full(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

    def open(self, path, flags):
        return os.open(self._full(path), flags)

    def read(self, path, length, offset, fh):
        return os.pread(fh, length, offset)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        os.truncate(self._full(path), length)

    def release(self, path, fh):
        os.close(fh)

    def fsync(self, path, datasync, fh):
        os.fsync(fh)

    def flush(self, path, fh):
        return 0

    def chmod(self, path, mode):
        os.chmod(self._full(path), mode)

    def chown(self, path, uid, gid):
        os.lchown(self._full(path), uid, gid)

    def utimens(self, path, times=None):
        os.utime(self._full(path), times, follow_symlinks=False)

    def unlink(self, path):
        os.unlink(self._full(path))

    def rmdir(self, path):
        os.rmdir(self._full(path))

    def symlink(self, name, target):
        os.symlink(target, self._full(name))

    def readlink(self, path):
        return os.readlink(self._full(path))

    def link(self, target, name):
        os.link(self._full(name), self._full(target))

    def statfs(self, path):
        st = os.statvfs(self._full(path))
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree")
        return {k: getattr(st, k) for k in (*keys, "f_files", "f_flag", "f_frsize", "f_namemax")}


if __name__ == "__main__":
    backing, mount = sys.argv[1:3]
    FUSE(
        CaseInsensitive(backing, inode_per_name="--inode-per-name" in sys.argv[3:]),
        mount,
        foreground=True,
        nothreads=True,
        attr_timeout=0,
        entry_timeout=0,
        use_ino=True,
    )
