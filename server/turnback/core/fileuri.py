"""File URIs to paths, as pygls reads them, without importing pygls below the fronts."""

from __future__ import annotations

import os
import re
from urllib import parse

_DRIVE_LETTER_PATH = re.compile(r"^\/[a-zA-Z]:")


def to_fs_path(uri: str) -> str | None:
    """The file system path of a `file:` URI (None for any other scheme).

    The same answer as `pygls.uris.to_fs_path`: UNC paths kept, Windows drive letters in
    lower case, the platform's separator.
    """
    try:
        # Escaped bytes that are not UTF-8 come back as the PEP 383 escapes turnback's own
        # results use for them (its `workTree` of such a folder), not as U+FFFD.
        scheme, netloc, path = (
            parse.unquote(part, errors="surrogateescape") for part in parse.urlparse(uri)[:3]
        )
    except TypeError:
        return None
    if scheme != "file":
        return None
    if netloc.lower() == "localhost":
        netloc = ""  # file://localhost/x is file:///x (RFC 8089)
    if netloc and path:
        value = f"//{netloc}{path}"  # a UNC path: file://share/c$/folder
    elif _DRIVE_LETTER_PATH.match(path):
        value = path[1].lower() + path[2:]  # a drive letter: file:///C:/folder
    else:
        value = path
    return value.replace("/", "\\") if os.name == "nt" else value
