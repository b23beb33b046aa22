"""Reads raw JSON params field by field; every problem names its field.

Handlers never structure params into typed classes, so a malformed request
always gets InvalidParams (-32602) with a message instead of a hang. This
checks only what the LSP front needs itself (the workspace, progress tokens,
restore options, code-lens arguments) and what JSON can carry but a name
cannot (lone surrogates); `value` hands everything else to the engine as sent,
and the engine checks it (the CLI's calls go through the same checks).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..core.gitpaths import is_utf8
from ..errors import InvalidParams


class Params:
    def __init__(self, raw: Any) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InvalidParams("params", "must be an object")
        self.raw = raw

    def _get(self, name: str) -> Any:
        return self.raw.get(name)

    def value(self, name: str, default: Any = None) -> Any:
        """The value as sent (`default` when absent or null), for the engine to check."""
        value = self._get(name)
        return default if value is None else value

    def string(self, name: str) -> str | None:
        value = self._get(name)
        if value is not None and not isinstance(value, str):
            raise InvalidParams(name, "must be a string")
        if value is not None and not is_utf8(value):
            raise InvalidParams(name, "must be valid Unicode (it holds a lone surrogate)")
        return value

    def path(self, name: str = "path") -> str | None:
        """A file path or URI. Bytes of a name that are not UTF-8 come as the lone
        surrogates U+DC80..U+DCFF that turnback's own results use for them (PEP 383)."""
        value = self._get(name)
        return None if value is None else self._one_path(name, value)

    @staticmethod
    def _one_path(name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise InvalidParams(name, "must be a string")
        try:
            os.fsencode(value)
        except UnicodeEncodeError:
            raise InvalidParams(
                name, "holds a lone surrogate that is not an escaped byte (U+DC80..U+DCFF)"
            ) from None
        return value

    def paths(self, name: str) -> list[str] | None:
        """A list of paths, each read as `path` reads one."""
        value = self._get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise InvalidParams(name, "must be a list of path strings")
        return [self._one_path(name, item) for item in value]

    def integer(self, name: str, minimum: int | None = None) -> int | None:
        value = self._get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidParams(name, "must be an integer")
        if minimum is not None and value < minimum:
            raise InvalidParams(name, f"must be >= {minimum}")
        return value

    def boolean(self, name: str) -> bool:
        value = self._get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise InvalidParams(name, "must be true or false")
        return value

    def choice(self, name: str, options: tuple[str, ...], default: str) -> str:
        value = self._get(name)
        if value is None:
            return default
        if value not in options:
            raise InvalidParams(name, "must be one of " + ", ".join(f'"{o}"' for o in options))
        return value

    def metadata(self) -> Any:
        value = self._get("metadata")
        if value is not None and not isinstance(value, dict):
            raise InvalidParams("metadata", "must be an object")
        if value is not None and not is_utf8(json.dumps(value, ensure_ascii=False)):
            raise InvalidParams("metadata", "must be valid Unicode (it holds a lone surrogate)")
        return value

    def token(self) -> int | str | None:
        """A work-done progress token: a string or an integer, as LSP defines it."""
        value = self._get("workDoneToken")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, str))):
            raise InvalidParams("workDoneToken", "must be a string or an integer")
        return value
