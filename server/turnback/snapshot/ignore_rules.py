"""Gitignore matching against the .gitignore files stored in a git tree (a snapshot).

Undo must never overwrite or delete a path that was ignored under the *snapshot's* rules (an
agent turn may have edited .gitignore since), but libgit2 only evaluates the live work tree's
rules. So this module re-implements git's ignore semantics over the blobs of a tree object.

pathspec (1.1, evaluated against `git check-ignore`) would replace only the pattern
translation and gets git's quirks wrong: POSIX classes (`[[:alpha:]]`) never match, `c**/x`
misses `cab/d/x`, a reversed range (`[z-a]`) or a trailing backslash raises instead of being
taken as git takes it. The translation below matches git on each (tests/unit/test_ignore_rules.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pygit2
from pygit2.enums import FileMode

# POSIX bracket classes understood by git's wildmatch, as regex class bodies.
# fmt: off
_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "\\x21-\\x7e", "lower": "a-z", "print": "\\x20-\\x7e",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z", "xdigit": "0-9a-fA-F",
}
# fmt: on


@dataclass(frozen=True)
class _Pattern:
    """One parsed gitignore line; `regex` is None when git would never match it."""

    regex: re.Pattern[str] | None
    negated: bool
    dir_only: bool
    anchored: bool  # matched against the path relative to its .gitignore, not the basename

    def matches(self, rel_path: str, is_dir: bool) -> bool:
        """Whether this pattern matches `rel_path` (relative to the .gitignore's directory)."""
        if self.regex is None or (self.dir_only and not is_dir):
            return False
        subject = rel_path if self.anchored else rel_path.rsplit("/", 1)[-1]
        return self.regex.fullmatch(subject) is not None


def _bracket(pat: str, i: int) -> tuple[str, int] | None:
    """Translate the `[...]` starting at pat[i]; returns (regex, next index) or None if open."""
    i += 1
    negate = i < len(pat) and pat[i] in "!^"
    i += negate
    parts: list[str] = []
    first = True
    while i < len(pat) and (pat[i] != "]" or first):
        first = False
        if pat.startswith("[:", i) and (end := pat.find(":]", i + 2)) != -1:
            name = pat[i + 2 : end]
            if name not in _CLASSES:
                return None  # git aborts on unknown classes: the pattern never matches
            parts.append(_CLASSES[name])
            i = end + 2
            continue
        if pat[i] == "\\":
            i += 1
            if i >= len(pat):
                return None
        char = pat[i]
        i += 1
        if i + 1 < len(pat) and pat[i] == "-" and pat[i + 1] != "]":
            hi = pat[i + 1]
            if hi == "\\" and i + 2 < len(pat):
                hi, i = pat[i + 2], i + 1
            # Like git, a reversed range still matches its first character.
            parts.append(f"{re.escape(char)}-{re.escape(hi)}" if char <= hi else re.escape(char))
            i += 2
        else:
            parts.append(re.escape(char))
    if i >= len(pat):
        return None
    body = "".join(parts)
    if not body:
        return ("[^/]" if negate else "(?!)"), i + 1
    return (f"[^/{body}]" if negate else f"(?!/)[{body}]"), i + 1


def _translate(pat: str) -> str | None:
    """Translate a wildmatch (WM_PATHNAME) pattern to a regex; None if git would abort."""
    out: list[str] = []
    i, n = 0, len(pat)
    # git compares the literal prefix separately and wildmatches the rest, so a `**` right after
    # that prefix counts as leading (`c**/x` matches `cab/d/x`); mirror that quirk.
    prefix = next((k for k, ch in enumerate(pat) if ch in "*?[\\"), n)
    while i < n:
        c = pat[i]
        if c == "*":
            j = i
            while j < n and pat[j] == "*":
                j += 1
            at_start = i in (0, prefix) or pat[i - 1] == "/"
            slash = 1 if pat.startswith("/", j) else 2 if pat.startswith("\\/", j) else 0
            if j - i >= 2 and at_start and (j == n or slash):
                if j == n:
                    out.append(".*")
                else:  # `**/`: zero or more whole directories
                    out.append("(?:.*/)?")
                    j += slash
            else:
                out.append("[^/]*")
            i = j
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            res = _bracket(pat, i)
            if res is None:
                return None
            out.append(res[0])
            i = res[1]
        elif c == "\\":
            if i + 1 >= n:
                return None
            out.append(re.escape(pat[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _split_line(line: str) -> tuple[str, bool, bool, bool] | None:
    """One .gitignore line parsed like git's add_pattern() (but for trailing tabs): the
    pattern, and whether it is negated, directory-only and anchored; None for blanks and
    comments."""
    if not line or line.startswith("#"):
        return None
    end = len(line)
    # Trailing blanks go, tabs too: git keeps a tab, but libgit2, whose scan decides what
    # a capture left out, strips it, and a restore must judge as the capture did.
    while end > 0 and line[end - 1] in " \t\r\v\f":
        backslashes = len(line[: end - 1]) - len(line[: end - 1].rstrip("\\"))
        if backslashes % 2:  # an escaped space ends the stripping
            break
        end -= 1
    line = line[:end]
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dir_only = line.endswith("/")
    if dir_only:
        line = line[:-1]
    anchored = "/" in line
    if line.startswith("/"):
        line = line[1:]
    if not line:
        return None
    return line, negated, dir_only, anchored


def _parse_line(line: str) -> _Pattern | None:
    split = _split_line(line)
    if split is None:
        return None
    text, negated, dir_only, anchored = split
    regex = _translate(text)
    return _Pattern(
        re.compile(regex, re.S) if regex is not None else None, negated, dir_only, anchored
    )


def _parse_patterns(lines: Iterable[str]) -> list[_Pattern]:
    """Parse gitignore lines into patterns, in file order (the last match wins)."""
    return [p for line in lines if (p := _parse_line(line)) is not None]


def pattern_lines(text: str) -> list[str]:
    """The lines of an ignore file's `text` that are patterns (no blank line, no comment)."""
    lines = text.removeprefix("\ufeff").split("\n")
    return [line for line in lines if _parse_line(line) is not None]


def ignoring_patterns(text: str) -> list[tuple[str, bool]]:
    """The patterns of an ignore file's `text` that ignore (not the `!` ones), each with
    whether it is anchored (matched against the path relative to the file's directory,
    not against the name)."""
    found = []
    for line in text.removeprefix("\ufeff").split("\n"):
        split = _split_line(line)
        if split is not None and not split[1]:
            found.append((split[0], split[3]))
    return found


def pattern_regex(pattern: str) -> str | None:
    """The regex (for re.S) of a wildmatch pattern; None when git would never match it."""
    return _translate(pattern)


class TreeIgnoreRules:
    """Ignore rules of the .gitignore files stored in one git tree."""

    def __init__(
        self, repo: pygit2.Repository, tree: pygit2.Tree | None, extra_patterns: Iterable[str] = ()
    ) -> None:
        self._repo = repo
        self._tree = tree
        self._extra = _parse_patterns(extra_patterns)
        self._cache: dict[str, list[_Pattern]] = {}
        self._dir_cache: dict[str, bool] = {}  # directory -> excluded, given its parents aren't

    def _rules_for(self, directory: str) -> list[_Pattern]:
        """Patterns of `<directory>/.gitignore` in the tree, loaded lazily and cached."""
        if directory not in self._cache:
            patterns: list[_Pattern] = []
            if self._tree is not None:
                path = f"{directory}/.gitignore" if directory else ".gitignore"
                try:
                    obj = self._tree[path]
                except KeyError:
                    obj = None
                # Like git, never follow a symlinked .gitignore.
                if isinstance(obj, pygit2.Blob) and obj.filemode != FileMode.LINK:
                    text = obj.data.decode("utf-8", errors="surrogateescape")
                    patterns = _parse_patterns(text.removeprefix("\ufeff").split("\n"))
            self._cache[directory] = patterns
        return self._cache[directory]

    def _excluded(self, parts: list[str], is_dir: bool) -> bool:
        """Decide one path given its ancestors are not excluded: the deepest last match wins."""
        for depth in range(len(parts) - 1, -1, -1):
            rel = "/".join(parts[depth:])
            for pattern in reversed(self._rules_for("/".join(parts[:depth]))):
                if pattern.matches(rel, is_dir):
                    return not pattern.negated
        full = "/".join(parts)
        for pattern in reversed(self._extra):
            if pattern.matches(full, is_dir):
                return not pattern.negated
        return False

    def is_ignored(self, path: str) -> bool:
        """True if `path` (a '/'-separated path relative to the tree root, a file; parent
        directories are considered as directories) is ignored."""
        parts = [p for p in path.split("/") if p]
        # An excluded parent directory excludes everything below it, irrevocably (git's rule).
        for i in range(1, len(parts)):
            key = "/".join(parts[:i])
            if key not in self._dir_cache:
                self._dir_cache[key] = self._excluded(parts[:i], is_dir=True)
            if self._dir_cache[key]:
                return True
        return bool(parts) and self._excluded(parts, is_dir=False)


class WorkspaceIgnoreRules:
    """A snapshot's ignore rules across the workspace's repositories: each path judged as
    git judges it, by the deepest repository holding it (`outside`'s keys, "" the root),
    with that repository's .gitignore files in the tree and its rules from outside the
    tree (outside_rules.py), relative to that repository's own top."""

    def __init__(
        self, repo: pygit2.Repository, tree: pygit2.Tree | None, outside: dict[str, list[str]]
    ) -> None:
        self._repo = repo
        self._tree = tree
        self._outside = outside
        self._roots = sorted(set(outside) - {""}, key=len, reverse=True)
        self._rules: dict[str, TreeIgnoreRules] = {}

    def is_ignored(self, path: str) -> bool:
        for root in self._roots:
            if path.startswith(root + "/"):
                return self._of(root).is_ignored(path[len(root) + 1 :])
        return self._of("").is_ignored(path)

    def _of(self, root: str) -> TreeIgnoreRules:
        if root not in self._rules:
            tree = self._tree
            if root and tree is not None:
                try:
                    found = tree[root]
                except KeyError:
                    found = None
                tree = found if isinstance(found, pygit2.Tree) else None
            self._rules[root] = TreeIgnoreRules(self._repo, tree, self._outside.get(root, ()))
        return self._rules[root]


def touches_ignore_files(paths: Iterable[str]) -> bool:
    """Whether any of `paths` is a `.gitignore`: every untracked verdict may have changed."""
    return any(p.rpartition("/")[2] == ".gitignore" for p in paths)
