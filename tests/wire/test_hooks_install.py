"""`turnback hooks install|uninstall|status` against real config files, per harness."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SERVER_ENV, cli_json, write
from turnback.hooks.harnesses import find_harness

#: harness -> project config file, and a config the user already had (with a hook of theirs)
JSON_CONFIGS: dict[str, tuple[str, dict]] = {
    "claude-code": (
        ".claude/settings.json",
        {
            "model": "opus",
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
        },
    ),
    "codex": (
        ".codex/hooks.json",
        {
            "hooks": {
                "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./audit.sh"}]}]
            }
        },
    ),
    "gemini": (
        ".gemini/settings.json",
        {
            "security": {"folderTrust": {"enabled": False}},
            "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "say hi"}]}]},
        },
    ),
    "cursor": (
        ".cursor/hooks.json",
        {"version": 1, "hooks": {"stop": [{"command": "./lint.sh", "loop_limit": 2}]}},
    ),
    "windsurf": (
        ".windsurf/hooks.json",
        {"hooks": {"pre_user_prompt": [{"command": "python3 check.py", "show_output": True}]}},
    ),
}
#: harness -> the files turnback owns there
FILE_CONFIGS: dict[str, tuple[str, ...]] = {
    "cline": (".clinerules/hooks/UserPromptSubmit", ".clinerules/hooks/TaskComplete"),
    "opencode": (".opencode/plugins/turnback.js",),
}


def hooks_cli(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    """`turnback hooks ARGS -C root` with HOME at `home`."""
    env = {**SERVER_ENV, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}
    env.pop("CODEX_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "turnback", "hooks", *args, "-C", str(root)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def _commands(config: dict) -> list[str]:
    found = []
    for entries in config.get("hooks", {}).values():
        for entry in entries:
            for handler in entry.get("hooks", [entry]):
                found.append(handler["command"])
    return found


# Proves install merges into an existing config keeping every user key and hook, writes
# turnback's commands by absolute path, changes nothing the second time, and uninstall
# leaves exactly the user's config.
@pytest.mark.parametrize("harness", list(JSON_CONFIGS))
def test_json_install_merges_and_uninstall_restores(repo: Path, home: Path, harness: str):
    rel, original = JSON_CONFIGS[harness]
    path = write(repo, rel, json.dumps(original, indent=4) + "\n")
    done = hooks_cli(repo, home, "install", harness)
    assert done.returncode == 0, done.stderr
    installed = json.loads(path.read_text())
    for key, value in original.items():
        if key != "hooks":
            assert installed[key] == value
    ours = [c for c in _commands(installed) if " hook " in c and "turnback" in c]
    # One per event: Claude Code also gets StopFailure and SessionEnd (interrupted turns).
    assert len(ours) == len(find_harness(harness).events) >= 2
    assert all(Path(shlex.split(c)[0]).is_absolute() for c in ours)
    assert set(_commands(original)) <= set(_commands(installed))
    text = path.read_text()
    again = hooks_cli(repo, home, "install", harness)
    assert again.returncode == 0 and "unchanged" in again.stdout
    assert path.read_text() == text
    assert "  installed" in hooks_cli(repo, home, "status").stdout.split(f"{harness} ")[1]
    removed = hooks_cli(repo, home, "uninstall", harness)
    assert removed.returncode == 0, removed.stderr
    assert path.read_text() == json.dumps(original, indent=4) + "\n"  # byte for byte


# Proves uninstall gives back the user's config byte for byte however install rewrote it
# (formatting, escapes, a key it added, an empty object), or, edited since, keeps the
# user's edit and never deletes a file the user had.
@pytest.mark.parametrize(
    ("harness", "text"),
    [
        ("claude-code", "{}\n"),
        ("claude-code", '{"hooks": {}}'),
        ("claude-code", '{"model":"x","env":{"X":"caf\\u00e9"}}'),
        ("cursor", '{\n  "version": 1\n}\n'),
        ("cursor", '{"hooks": {"stop": [{"command": "echo bye"}]}}'),
    ],
)
def test_uninstall_gives_back_the_bytes(repo: Path, home: Path, harness: str, text: str):
    rel, _ = JSON_CONFIGS[harness]
    path = write(repo, rel, text)
    assert hooks_cli(repo, home, "install", harness).returncode == 0
    assert path.read_text() != text
    assert hooks_cli(repo, home, "uninstall", harness).returncode == 0
    assert path.read_text() == text
    hooks_cli(repo, home, "install", harness)
    edited = json.loads(path.read_text()) | {"mine": True}
    path.write_text(json.dumps(edited))
    assert hooks_cli(repo, home, "uninstall", harness).returncode == 0
    assert json.loads(path.read_text()).get("mine") is True


# Proves a number JSON cannot write back (1e400 would become `Infinity`) is refused and
# the file left alone, and a config that is a symlink stays one while its target gets
# the hooks and, after uninstall, its bytes back.
def test_config_edge_cases(repo: Path, home: Path, tmp_path: Path):
    path = write(repo, ".claude/settings.json", '{"big": 1e400}\n')
    done = hooks_cli(repo, home, "install", "claude-code")
    assert done.returncode == 1 and "too large" in done.stderr
    assert path.read_text() == '{"big": 1e400}\n'
    path.unlink()
    dotfiles = write(tmp_path, "dotfiles/settings.json", '{"model": "x"}\n')
    path.symlink_to(dotfiles)
    assert hooks_cli(repo, home, "install", "claude-code").returncode == 0
    assert path.is_symlink() and "turnback" in dotfiles.read_text()
    assert hooks_cli(repo, home, "uninstall", "claude-code").returncode == 0
    assert path.is_symlink() and dotfiles.read_text() == '{"model": "x"}\n'


# Proves a config that is a dangling symlink (into a dotfiles folder not made yet) stays
# one after uninstall, and the file install made through it is removed: uninstall deleted
# the symlink and left the file holding turnback's hooks.
def test_dangling_symlinked_config(repo: Path, home: Path, tmp_path: Path):
    path = repo / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    dotfiles = tmp_path / "dotfiles" / "settings.json"
    dotfiles.parent.mkdir()
    path.symlink_to(dotfiles)
    assert hooks_cli(repo, home, "install", "claude-code").returncode == 0
    assert "turnback" in dotfiles.read_text()
    assert hooks_cli(repo, home, "uninstall", "claude-code").returncode == 0
    assert path.is_symlink() and not dotfiles.exists()


# Proves a hook group edited by hand to hold turnback's hook beside the user's own command
# counts as installed (install added a second turnback entry: two turns per prompt), and
# uninstall takes out turnback's hook only, keeping the user's command.
def test_hook_group_shared_with_the_users_command(repo: Path, home: Path):
    turnback = find_harness("claude-code")
    assert turnback is not None
    ours = "turnback hook claude-code UserPromptSubmit"
    mine = {"type": "command", "command": "echo mine"}
    group = {"hooks": [mine, {"type": "command", "command": ours}]}
    path = write(
        repo, ".claude/settings.json", json.dumps({"hooks": {"UserPromptSubmit": [group]}})
    )
    assert hooks_cli(repo, home, "install", "claude-code").returncode == 0
    prompt_hooks = json.loads(path.read_text())["hooks"]["UserPromptSubmit"]
    assert len(prompt_hooks) == 1 and prompt_hooks[0]["hooks"][0] == mine
    assert sum("turnback" in c for c in _commands(json.loads(path.read_text()))) == 4
    assert hooks_cli(repo, home, "uninstall", "claude-code").returncode == 0
    assert json.loads(path.read_text()) == {"hooks": {"UserPromptSubmit": [{"hooks": [mine]}]}}


# Proves a config turnback cannot parse is reported and never overwritten, by install
# or by uninstall.
@pytest.mark.parametrize("harness", list(JSON_CONFIGS))
def test_unparsable_config_left_alone(repo: Path, home: Path, harness: str):
    rel, _ = JSON_CONFIGS[harness]
    path = write(repo, rel, '{"hooks": {"Stop": [}  // a comment\n')
    for action in ("install", "uninstall"):
        done = hooks_cli(repo, home, action, harness)
        assert done.returncode == 1
        assert str(path) in done.stderr and "not valid JSON" in done.stderr
        assert path.read_text() == '{"hooks": {"Stop": [}  // a comment\n'


# Proves install into a project with no config creates it, and uninstall removes the file
# and the folders it created (nothing of turnback's is left behind: an empty `.claude/`,
# `.cursor/`, `.gemini/` stayed).
@pytest.mark.parametrize("harness", [*JSON_CONFIGS, *FILE_CONFIGS])
def test_fresh_install_then_uninstall_leaves_nothing(repo: Path, home: Path, harness: str):
    before = sorted(p.relative_to(repo) for p in repo.rglob("*") if ".git" not in p.parts)
    rel = JSON_CONFIGS[harness][0] if harness in JSON_CONFIGS else FILE_CONFIGS[harness][0]
    assert hooks_cli(repo, home, "install", harness).returncode == 0
    assert (repo / rel).is_file()
    assert hooks_cli(repo, home, "uninstall", harness).returncode == 0
    after = sorted(p.relative_to(repo) for p in repo.rglob("*") if ".git" not in p.parts)
    assert after == before


# Proves the files turnback owns (Cline's hook scripts, OpenCode's plugin) are written once,
# kept beside the user's own files, never written over a file that is not turnback's, and
# removed exactly by uninstall.
@pytest.mark.parametrize("harness", list(FILE_CONFIGS))
def test_owned_files_install_and_uninstall(repo: Path, home: Path, harness: str):
    rels = FILE_CONFIGS[harness]
    neighbour = write(repo, str(Path(rels[0]).parent / "Mine"), "#!/bin/sh\necho mine\n")
    assert hooks_cli(repo, home, "install", harness).returncode == 0
    texts = {rel: (repo / rel).read_text() for rel in rels}
    again = hooks_cli(repo, home, "install", harness)
    assert again.returncode == 0 and again.stdout.count("unchanged") == len(rels)
    assert {rel: (repo / rel).read_text() for rel in rels} == texts
    if harness == "cline":
        assert all(os.stat(repo / rel).st_mode & stat.S_IXUSR for rel in rels)
    assert hooks_cli(repo, home, "uninstall", harness).returncode == 0
    assert not any((repo / rel).exists() for rel in rels)
    assert neighbour.read_text() == "#!/bin/sh\necho mine\n"
    theirs = write(repo, rels[0], "user's own file\n")
    refused = hooks_cli(repo, home, "install", harness)
    assert refused.returncode == 1 and "not turnback's" in refused.stderr
    assert theirs.read_text() == "user's own file\n"


# Proves the command install writes runs turnback under a PATH that does not have it,
# end to end: Cline's installed hook script, run by a shell, records a turn.
def test_installed_command_works_without_path(repo: Path, home: Path):
    assert hooks_cli(repo, home, "install", "cline").returncode == 0
    payload = {"taskId": "t1", "workspaceRoots": [str(repo)], "userPromptSubmit": {"prompt": "go"}}
    env = {**SERVER_ENV, "PATH": "/nonexistent"}
    done = subprocess.run(
        ["/bin/sh", str(repo / ".clinerules/hooks/UserPromptSubmit")],
        cwd=repo,
        env=env,
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, '{"cancel": false}\n'), done.stderr
    [turn] = cli_json(repo, "list", "--session", "cline:t1")["turns"]
    assert turn["label"] == "go"


# Proves Claude Code's installed command string runs as its shell would run it, with a
# bare PATH, and opens a turn.
def test_claude_settings_command_runs(repo: Path, home: Path):
    assert hooks_cli(repo, home, "install", "claude").returncode == 0
    settings = json.loads((repo / ".claude/settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    payload = {"session_id": "s9", "cwd": str(repo), "prompt": "hello there"}
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=repo,
        env={**SERVER_ENV, "PATH": "/nonexistent"},
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert (
        cli_json(repo, "list", "--session", "claude-code:s9")["turns"][0]["label"] == "hello there"
    )


# Proves --user writes the user's config under HOME (not the project) and uninstall
# --user removes it; aliases name the same harness.
def test_user_scope(repo: Path, home: Path):
    assert hooks_cli(repo, home, "install", "gemini-cli", "--user").returncode == 0
    assert (home / ".gemini" / "settings.json").is_file()
    assert not (repo / ".gemini").exists()
    assert hooks_cli(repo, home, "uninstall", "gemini", "--user").returncode == 0
    assert not (home / ".gemini" / "settings.json").exists()


# Proves the Codex installer says what the user must do for the hooks to run at all
# (trust them in /hooks; trust the project), naming this project's folder.
def test_codex_install_says_how_to_trust(repo: Path, home: Path):
    done = hooks_cli(repo, home, "install", "codex")
    assert done.returncode == 0
    assert "/hooks" in done.stdout and f'[projects."{repo}"]' in done.stdout
    assert 'trust_level = "trusted"' in done.stdout


# Proves an unknown harness is a usage error naming the known ones, and changes nothing.
def test_unknown_harness(repo: Path, home: Path):
    done = hooks_cli(repo, home, "install", "aider")
    assert done.returncode == 2 and "claude-code" in done.stderr
    assert sorted(p.name for p in repo.iterdir()) == [".git", ".gitignore", "README.md", "src"]


# Proves the OpenCode plugin turnback writes is valid JavaScript (node --check), exports
# only functions, and never writes the prompt's parts.
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_opencode_plugin_is_valid_javascript(repo: Path, home: Path):
    assert hooks_cli(repo, home, "install", "opencode").returncode == 0
    plugin = repo / ".opencode/plugins/turnback.js"
    module = plugin.with_suffix(".mjs")
    module.write_text(plugin.read_text())
    check = subprocess.run(["node", "--check", str(module)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    text = plugin.read_text()
    assert text.count("export ") == 1 and "export const TurnbackPlugin = async" in text
    assert "output.parts =" not in text and ".push(" not in text


_DRIVE_PLUGIN = """
import { writeFileSync } from "node:fs";
import { TurnbackPlugin } from "%(module)s";
const hooks = await TurnbackPlugin({ directory: %(repo)s, worktree: %(repo)s });
const output = { parts: [
  { type: "text", text: "Make it so\\nthen stop" },
  { type: "text", text: "injected", synthetic: true },
] };
const before = JSON.stringify(output);
await hooks["chat.message"]({ sessionID: "ses_1", messageID: "msg_1" }, output);
if (JSON.stringify(output) !== before) { console.log("parts changed"); process.exit(3); }
writeFileSync(%(repo)s + "/src/app.py", "changed by the agent\\n");
await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_1" } } });
await hooks.dispose();
"""


# Proves the installed OpenCode plugin, loaded by node and called as OpenCode calls it
# (chat.message awaited, session.idle not, dispose at shutdown), records one sealed turn
# labelled with the prompt, and leaves output.parts untouched.
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_opencode_plugin_drives_hooks(repo: Path, home: Path, tmp_path: Path):
    assert hooks_cli(repo, home, "install", "opencode").returncode == 0
    module = tmp_path / "turnback.mjs"
    module.write_text((repo / ".opencode/plugins/turnback.js").read_text())
    driver = tmp_path / "drive.mjs"
    driver.write_text(_DRIVE_PLUGIN % {"module": module.as_uri(), "repo": json.dumps(str(repo))})
    done = subprocess.run(
        ["node", str(driver)], env=SERVER_ENV, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [turn] = cli_json(repo, "list", "--session", "opencode:ses_1")["turns"]
    assert (turn["label"], turn["sealed"]) == ("Make it so", True)
    assert turn["metadata"]["messageId"] == "msg_1"
