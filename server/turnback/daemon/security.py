"""The daemon's channel is private: checks both ends make (standard library only).

The socket sits in a directory only its owner can enter (0700), is itself 0600,
and each side asks the kernel who the other is (SO_PEERCRED): a process of
another user is never served, and a socket of another user is never trusted.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct

_UCRED = struct.Struct("3i")  # pid, uid, gid


def peer(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a connected Unix socket."""
    data = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, _gid = _UCRED.unpack(data)
    return pid, uid


def is_private_dir(path: str, dir_fd: int | None = None) -> bool:
    """A real directory (not a symlink), owned by this user, closed to everyone else."""
    try:
        st = os.fstat(dir_fd) if dir_fd is not None else os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def make_private_dir(path: str) -> None:
    """Creates `path` 0700, or closes an existing one of ours; raises if it is not ours."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a directory of this user")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def is_own_socket(path: str) -> bool:
    """A socket file (not a symlink) owned by this user."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid()
