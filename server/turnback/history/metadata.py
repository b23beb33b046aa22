"""A turn's metadata: any JSON object a harness wants back, within what every front can
send back (the limits are protocol.md's)."""

from __future__ import annotations

import math
from typing import Any

from ..core.gitpaths import is_utf8
from ..errors import InvalidParams

#: How deeply a turn's metadata may nest: an agent's ids and indexes need a few levels,
#: and every front must be able to send it back (pygls's serializer recurses per level and
#: failed near 400, so the answer, and every later one naming the turn, never came).
MAX_METADATA_DEPTH = 64


def check_metadata(value: Any) -> None:
    """Metadata every front can send back: JSON has no NaN or Infinity (a list holding
    one was answered as invalid JSON from then on), nor lone surrogates, and a client's
    parser stops somewhere below 100 levels."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if level > MAX_METADATA_DEPTH:
                raise InvalidParams(
                    "metadata", f"must nest at most {MAX_METADATA_DEPTH} levels deep"
                )
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, level + 1) for child in children)
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidParams("metadata", "holds NaN or Infinity, which JSON cannot carry")
        elif isinstance(item, str) and not is_utf8(item):
            raise InvalidParams("metadata", "must be valid Unicode (it holds a lone surrogate)")
