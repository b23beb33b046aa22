"""Every use of pygit2's private parts, in one place (checked by tests/unit/test_private_apis.py).

The public Index API cannot add an entry with its stat data (so every later scan would
rehash the file), read an entry's flags (skip-worktree, assume-unchanged) or its path by
position without building Python objects, nor diff a standalone index against a
repository, nor limit a work-tree diff to a list of paths. These go through pygit2's cffi
handle (`Index._index`, `C`, `ffi`) and its `Index._repo`; pyproject.toml pins pygit2
to the minor version they were checked on.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pygit2
from pygit2 import C, ffi
from pygit2.enums import DiffOption
from pygit2.errors import check_error

from ..errors import ObjectMissing

#: A `git_index_entry *` (cffi cdata).
IndexEntry = Any


def open_index(path: str) -> pygit2.Index:
    """`pygit2.Index(path)`, without the "Exception ignored in Index.__del__" traceback
    pygit2 prints when the file cannot be read (its `__del__` frees a pointer `__init__`
    never set; freeing NULL is nothing)."""
    index = pygit2.Index.__new__(pygit2.Index)
    index._index = ffi.NULL
    index.__init__(path)  # type: ignore[misc]
    return index


def entry_at(index: pygit2.Index, position: int) -> IndexEntry:
    return C.git_index_get_byindex(index._index, position)


def entry_path(entry: IndexEntry) -> bytes:
    return ffi.string(entry.path)


def new_entry(path: str, oid: pygit2.Oid, mode: int) -> tuple[IndexEntry, Any]:
    """A zeroed C entry for `path`; keep the second value alive until the entry is added."""
    entry = ffi.new("git_index_entry *")
    ffi.buffer(ffi.addressof(entry, "id"))[:] = oid.raw[:]
    entry.mode = int(mode)
    name = ffi.new("char[]", os.fsencode(path))
    entry.path = name
    return entry, name


def add_entry(index: pygit2.Index, entry: IndexEntry) -> None:
    check_error(C.git_index_add(index._index, entry), io=True)


def attach_repository(index: pygit2.Index, repo: pygit2.Repository) -> None:
    """A standalone index reads and writes only its own file; diffing it needs the repo."""
    index._repo = repo


def diff_index_to_workdir(
    repo: pygit2.Repository, index: pygit2.Index, flags: int, paths: list[bytes] | None
) -> tuple[pygit2.Diff, int | None]:
    """`Index.diff_to_workdir` limited to `paths` (literal paths: each names itself and
    everything below it), which pygit2's wrapper cannot pass; the work-tree walk then never
    enters what the list leaves out. libgit2 runs with the GIL released (cffi).

    Also how many files libgit2 hashed to learn whether their content changed (None where
    libgit2's perfdata cannot be read): those it found unchanged make no delta."""
    options = ffi.new("git_diff_options *")
    check_error(C.git_diff_options_init(options, 1))
    keep = []
    if paths is not None:
        flags |= DiffOption.DISABLE_PATHSPEC_MATCH
        keep = [ffi.new("char[]", path) for path in paths]
        strings = ffi.new("char *[]", keep)
        options.pathspec.strings = strings
        options.pathspec.count = len(keep)
    options.flags = int(flags)
    out = ffi.new("git_diff **")
    check_error(C.git_diff_index_to_workdir(out, repo._repo, index._index, options))
    hashed = _files_hashed(out[0])
    return pygit2.Diff.from_c(bytes(ffi.buffer(out)[:]), repo), hashed


class _DiffPerfdata(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint),
        ("stat_calls", ctypes.c_size_t),
        ("oid_calculations", ctypes.c_size_t),
    ]


def _files_hashed(diff: Any) -> int | None:
    function = _declared("git_diff_get_perfdata")
    if function is None:
        return None
    data = _DiffPerfdata(version=1)  # GIT_DIFF_PERFDATA_VERSION
    if function(ctypes.byref(data), ctypes.c_void_p(_address(diff))) != 0:
        return None
    return int(data.oid_calculations)


@functools.cache
def _undeclared(name: str) -> Any:
    """A libgit2 function pygit2 does not declare (`int f(void *...)`), or None.

    Looked up through the loaded extension, whose libgit2 dependency exports it (Linux,
    macOS); where that fails (a Windows DLL), callers go without it."""
    try:
        function = getattr(ctypes.CDLL(pygit2._libgit2.__file__), name)
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    return function


def _address(cdata: Any) -> int:
    return int(ffi.cast("uintptr_t", cdata))


@functools.cache
def _declared(name: str) -> Any:
    """`_undeclared(name)` taking two pointers (`int f(void *, void *)`), or None."""
    function = _undeclared(name)
    if function is not None:
        function.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return function


def use_empty_index(repo: pygit2.Repository) -> bool:
    """Gives `repo` an empty in-memory index of its own, so that libgit2 never loads the
    user's for it (a work-tree diff that hashes a file looks for `.gitattributes` in the
    repository's index: 14 MiB and ~40 ms at 100k entries per handle). Says if it could."""
    function = _declared("git_repository_set_index")
    if function is None:
        return False
    empty = pygit2.Index()
    if function(_address(repo._repo), _address(empty._index)) != 0:
        return False
    repo._turnback_empty_index = empty  # type: ignore[attr-defined]  # the repo holds a ref too
    return True


def add_config_file(repo: pygit2.Repository, path: str, level: int) -> None:
    """Makes the file at `path` `repo`'s configuration at `level`, in place of the one
    libgit2 found there (pygit2's RepositoryConfig refuses `add_file`). Nothing is written:
    only this handle reads it. A file that does not exist reads as empty."""
    config = ffi.new("git_config **")
    check_error(C.git_repository_config(config, repo._repo))
    try:
        check_error(
            C.git_config_add_file_ondisk(config[0], os.fsencode(path), level, repo._repo, 1)
        )
    finally:
        C.git_config_free(config[0])


@contextmanager
def as_repository_index(repo: pygit2.Repository, index: pygit2.Index) -> Iterator[bool]:
    """`index` as `repo`'s own index meanwhile (libgit2's UPDATE_INDEX refreshes the
    repository's index, never the one being diffed), then an empty one again. Yields
    False where the index cannot be set (a Windows DLL): nothing is changed then."""
    function = _declared("git_repository_set_index")
    if function is None or function(_address(repo._repo), _address(index._index)) != 0:
        yield False
        return
    try:
        yield True
    finally:
        use_empty_index(repo)  # and libgit2 lets go of `index`


class MemoryObjects:
    """libgit2's in-memory object backend ("mempack") on top of one repository handle:
    every object written through that handle is kept in memory, readable through it,
    until `reset`. pygit2 declares none of it (and reads by prefix, which mempack does
    not implement, so `read` is here too); `attach` answers None where it is missing."""

    _FUNCTIONS = (
        "git_mempack_new",
        "git_mempack_reset",
        "git_repository_odb",
        "git_odb_add_backend",
        "git_odb_free",
        "git_odb_read",
        "git_odb_object_data",
        "git_odb_object_size",
        "git_odb_object_type",
        "git_odb_object_free",
    )

    def __init__(self, repo: pygit2.Repository, backend: ctypes.c_void_p) -> None:
        self._repo = repo
        self._backend = backend  # owned by the repository's object database
        self._c = {name: _undeclared(name) for name in self._FUNCTIONS}
        self._c["git_odb_object_data"].restype = ctypes.c_void_p
        self._c["git_odb_object_size"].restype = ctypes.c_size_t

    @classmethod
    def attach(cls, repo: pygit2.Repository) -> MemoryObjects | None:
        if any(_undeclared(name) is None for name in cls._FUNCTIONS):
            return None
        backend, odb = ctypes.c_void_p(), ctypes.c_void_p()
        if _undeclared("git_mempack_new")(ctypes.byref(backend)) != 0:
            return None
        handle = ctypes.c_void_p(_address(repo._repo))
        if _undeclared("git_repository_odb")(ctypes.byref(odb), handle) != 0:
            return None
        try:
            # Above every other backend (libgit2's are 1 and 2), so it takes every write;
            # the odb owns it from here and frees it with the repository handle.
            added = _undeclared("git_odb_add_backend")(odb, backend, ctypes.c_int(1000))
        finally:
            _undeclared("git_odb_free")(odb)  # the reference git_repository_odb gave
        return cls(repo, backend) if added == 0 else None

    def read(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        """An object's type number and content, from memory or the repository."""
        c, odb, obj = self._c, ctypes.c_void_p(), ctypes.c_void_p()
        if c["git_repository_odb"](ctypes.byref(odb), ctypes.c_void_p(_address(self._repo._repo))):
            raise KeyError(str(oid))
        try:
            if c["git_odb_read"](ctypes.byref(obj), odb, ctypes.create_string_buffer(oid.raw, 20)):
                raise KeyError(str(oid))
            size = c["git_odb_object_size"](obj)
            data = ctypes.string_at(c["git_odb_object_data"](obj), size)
            kind = c["git_odb_object_type"](obj)
            c["git_odb_object_free"](obj)
            return kind, data
        finally:
            c["git_odb_free"](odb)

    def reset(self) -> None:
        """Forgets every object held (written elsewhere by now, or not needed)."""
        self._c["git_mempack_reset"](self._backend)


def set_workdir(repo: pygit2.Repository, path: str) -> None:
    """Sets `repo`'s work tree; a path that is not UTF-8 (a linked worktree named with a
    byte that is not) goes as its bytes, which pygit2 takes where it cannot encode the str."""
    try:
        repo.workdir = path
    except UnicodeEncodeError:
        repo.workdir = os.fsencode(path)  # type: ignore[assignment]


#: pygit2's lookup error: NotFoundError from 1.19, a plain KeyError in 1.18 (the last
#: release for Python 3.10), which also takes paths as strict UTF-8 only.
NOT_FOUND: type[Exception] = getattr(pygit2, "NotFoundError", KeyError)
STRICT_UTF8_PATHS = NOT_FOUND is KeyError


#: Attributes that make libgit2 convert a file between the object and the disk, asked where
#: pygit2 has no `load_filter_list` (1.18, the last for Python 3.10).
_CONVERTING_ATTRIBUTES = ("filter", "text", "eol", "crlf", "ident", "working-tree-encoding")


def has_filters(repo: pygit2.Repository, path: str) -> bool:
    """Whether checking `path` out converts its bytes (a filter, line endings, an encoding).
    Without pygit2's `load_filter_list`, any such attribute or `core.autocrlf` counts: more
    files hashed again, never one trusted that should not be."""
    load = getattr(repo, "load_filter_list", None)
    if load is not None:
        return load(path) is not None
    try:
        autocrlf = repo.config.get_bool("core.autocrlf")
    except (KeyError, ValueError, pygit2.GitError):
        autocrlf = (
            repo.config["core.autocrlf"] == "input" if "core.autocrlf" in repo.config else False
        )
    return autocrlf or any(repo.get_attr(path, name) is not None for name in _CONVERTING_ATTRIBUTES)


def object_size(repo: pygit2.Repository, oid: pygit2.Oid) -> int:
    """An object's size, from its header where pygit2 can read one alone (1.19+)."""
    read_header = getattr(repo.odb, "read_header", None)
    if read_header is not None:
        return read_header(oid)[1]
    return len(repo.odb.read(oid)[1])


def is_missing_object(error: BaseException) -> bool:
    """pygit2's answer for an object not in the repository: a NotFoundError (a GitError and
    a KeyError) from 1.19, a plain KeyError or GitError in 1.18; and `repo[oid]`'s plain
    KeyError naming the id, from a handle that had not read the object before."""
    if isinstance(error, KeyError) and ObjectMissing.names_an_object(error):
        return True
    return isinstance(error, (KeyError, pygit2.GitError)) and "not found" in str(error)
