"""The environment of every turnback and git process a test starts.

Every server runs with HOME and XDG_CONFIG_HOME pointing at empty folders, so no test
depends on (or proves anything with) a git identity configured on the machine, and the
turnback data directory is private to the test run.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_HOME = Path(tempfile.mkdtemp(prefix="turnback-test-home-"))
DATA_DIR = Path(tempfile.mkdtemp(prefix="turnback-test-data-"))

#: The environment of every turnback process a test starts: no git identity, private data.
SERVER_ENV = {
    **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    "HOME": str(_HOME),
    "XDG_CONFIG_HOME": str(_HOME / ".config"),
    "TURNBACK_DATA_DIR": str(DATA_DIR),
    "GIT_CONFIG_NOSYSTEM": "1",
    # A CLI capture would otherwise start a background daemon that outlives the test;
    # tests/wire/test_daemon.py turns it on where it is the subject.
    "TURNBACK_DAEMON": "off",
}
#: The git CLI in tests: an identity through the environment only.
GIT_ENV = {
    **SERVER_ENV,
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
}
