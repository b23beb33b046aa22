"""The server's settings are listed once; every other list is derived and checked here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "settings_contract.py"


def _contract():
    spec = importlib.util.spec_from_file_location("settings_contract", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# protocol.md's table, package.json's configuration and settings.ts's keys match config.py.
def test_every_list_of_settings_matches_the_server():
    stale = _contract().stale_files()
    assert not stale, f"run `python scripts/settings_contract.py` to rewrite: {stale}"


# A setting added to the server shows up in each derived list (the check is not vacuous).
def test_a_new_setting_reaches_every_list():
    contract = _contract()
    fields = [f.name for f in contract._fields()]
    assert "capture_byte_limit" in fields
    assert "`captureByteLimit`" in contract.protocol_table()
    assert "turnback.captureByteLimit" in contract.package_json(contract.PACKAGE_JSON.read_text())
    assert "'captureByteLimit'," in contract.settings_ts(contract.SETTINGS_TS.read_text())
