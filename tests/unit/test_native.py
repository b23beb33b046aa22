"""The switch that makes Linux exercise the portable paths macOS and Windows take."""

from __future__ import annotations

import sys

import pytest

from turnback.core import native
from turnback.daemon import client
from turnback.snapshot import fswatch


# TURNBACK_PORTABLE=1 turns inotify off, so `make test`'s portable run means it.
def test_portable_mode_switches_off_the_linux_accelerations(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TURNBACK_PORTABLE", "1")
    assert native.linux_libc() is None
    assert not fswatch.available()
    with pytest.raises(OSError):
        fswatch.Watcher("/", lambda _rel: False)
    monkeypatch.setenv("TURNBACK_DAEMON", "on")
    assert client.mode() == "off"  # no SO_PEERCRED off Linux: hooks capture in process


# Without the switch, Linux uses inotify (the watcher tests rely on it).
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux-only")
def test_linux_uses_inotify_by_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TURNBACK_PORTABLE", raising=False)
    assert fswatch.available()
