"""What a file a restore writes gets besides its bytes: permission bits, extended
attributes (a POSIX ACL), owner and group, as editors and git give them."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from pygit2.enums import FileMode

from ..core.ownership import give_new


def restored_mode(existing: os.stat_result | None, original: int | None, mode: int) -> int:
    """The bits of the file being replaced with the snapshot's exec bit, as editors do;
    exactly the bits a path had before this writer first changed it when the exec bit
    agrees (a rollback); for a new file, git's default under the umask."""
    executable = mode == FileMode.BLOB_EXECUTABLE
    if original is not None and bool(original & stat.S_IXUSR) == executable:
        return original
    if existing is not None and stat.S_ISREG(existing.st_mode):
        bits = stat.S_IMODE(existing.st_mode) & 0o777
    elif existing is None and original is not None:
        bits = original
    else:
        return (0o755 if executable else 0o644) & ~_umask()
    if executable:
        return bits | ((bits & 0o444) >> 2)  # executable wherever it is readable
    return bits & ~0o111


#: What a file system that does not let modes be changed answers a chmod.
_CHMOD_REFUSED = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP}


def set_bits(temp: Path, bits: int) -> None:
    """Gives the new file `bits`, unless it has them already. A file system that refuses
    chmod (a FUSE or bind mount that denies it, vfat for the exec bit) keeps the bits it
    gives every file: the bytes are put back all the same, where the restore failing on
    its first file, and its rollback failing the same way, would leave the tree half done."""
    try:
        if stat.S_IMODE(os.lstat(temp).st_mode) != bits:
            os.chmod(temp, bits)
    except OSError as error:
        if error.errno not in _CHMOD_REFUSED:
            raise


def has_default_acl(folder: Path) -> bool:
    try:
        return bool(os.getxattr(folder, "system.posix_acl_default"))
    except (OSError, AttributeError):  # none, no ACLs on this file system, or not Linux
        return False


def keep_attributes(temp: Path, target: Path, bits: int | None) -> None:
    """Gives `temp` the extended attributes of the file it replaces, and only those: its
    POSIX ACL (whose mask `st_mode` shows as the group bits, so a rewrite without it widened
    the group's access) and the user's own; not the default ACL a temporary file made in
    the target's folder inherited, which the file never had (a user it named could read
    the file after the undo). Then `bits` again, for the exec bit the snapshot sets."""
    try:
        names = os.listxattr(target, follow_symlinks=False)
        inherited = os.listxattr(temp, follow_symlinks=False)
    except (OSError, AttributeError):
        return
    for name in inherited:
        if name not in names:
            with contextlib.suppress(OSError):
                os.removexattr(temp, name, follow_symlinks=False)
    for name in names:
        with contextlib.suppress(OSError):
            os.setxattr(temp, name, os.getxattr(target, name, follow_symlinks=False))
    if (names or inherited) and bits is not None:
        with contextlib.suppress(OSError):
            os.chmod(temp, bits)  # (with an ACL: its owner, mask and other entries)


def inherit_group(temp: Path, parent: Path) -> None:
    """The group a file made in `parent` would get: a setgid directory gives its own."""
    try:
        folder = os.stat(parent)
        if folder.st_mode & stat.S_ISGID:
            os.chown(temp, -1, folder.st_gid, follow_symlinks=False)
    except OSError:
        pass  # not a member of that group: keep the user's own, as git would


def keep_owner(temp: Path, existing: os.stat_result | None, parent: Path) -> None:
    """The owner and group of the file being replaced, where this process may give them: a
    restore run as root (a dev container over a bind-mounted project) gave the user's files
    to root, which the user could then no longer edit outside it. A new file run as root
    is its folder's owner's (ownership.py)."""
    if existing is None or stat.S_ISDIR(existing.st_mode):
        give_new(temp, parent)
        return
    if not hasattr(os, "geteuid"):
        return
    if (existing.st_uid, existing.st_gid) == (os.geteuid(), os.getegid()):
        return
    uid = existing.st_uid if os.geteuid() == 0 else -1
    with contextlib.suppress(OSError):  # not a member of that group: keep the user's own
        os.chown(temp, uid, existing.st_gid, follow_symlinks=False)


_UMASK: int | None = None


def _umask() -> int:
    global _UMASK
    if _UMASK is None:
        current = os.umask(0)
        os.umask(current)
        _UMASK = current
    return _UMASK
