#!/bin/sh
# Installs the AI agents the end-to-end tests in tests/agents/ drive, each from the npm registry
# at a pinned version, into a cache folder outside the repository:
#   ${TURNBACK_AGENTS_CACHE:-~/.cache/turnback-agents}/<name>-<version>/node_modules/.bin/<command>
# Each agent is one `npm install` and a stamp; an agent that fails to install is reported and
# skipped (its tests then skip, saying so), never fatal. About 350 MB per agent.
#
# Usage: install-agents.sh           install what is missing (exits at once when all is there)
#        install-agents.sh --check   exit 0 when every agent is installed, 1 otherwise
#        install-agents.sh --print   print "<name> <command path> <installed|missing>" per agent
#        install-agents.sh NAME...   install only these (claude-code, codex, gemini, opencode)
set -u

CACHE=${TURNBACK_AGENTS_CACHE:-${HOME}/.cache/turnback-agents}
# name  npm package  version  command (keep in step with tests/agents/agents.py)
AGENTS="claude-code @anthropic-ai/claude-code 2.1.328 claude
codex @openai/codex 0.169.0 codex
gemini @google/gemini-cli 0.61.0 gemini
opencode opencode-ai 1.18.33 opencode"

log() { echo "install-agents: $*"; }

dir_of() { echo "$CACHE/$1-$3"; }
ready() { # name package version command
  d=$(dir_of "$@")
  [ -f "$d/.turnback-installed" ] && [ -x "$d/node_modules/.bin/$4" ]
}

# OpenCode npm-installs @opencode-ai/plugin into a project's .opencode/ on the first run after a
# plugin appears (8-50 s, from the registry); the tests copy this in instead. Not fatal.
opencode_plugin_deps() { # dir version
  p="$1/plugin-deps"
  rm -rf "$p" && mkdir -p "$p" || return 0
  printf '{\n  "dependencies": {\n    "@opencode-ai/plugin": "%s"\n  }\n}\n' "$2" >"$p/package.json"
  if (cd "$p" && npm install --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
    touch "$p/.turnback-installed"
  else
    log "could not cache @opencode-ai/plugin@$2: OpenCode will install it on each test's first run"
  fi
}

install_one() { # name package version command
  d=$(dir_of "$@")
  if ready "$@"; then
    if [ "$1" = opencode ] && [ ! -f "$d/plugin-deps/.turnback-installed" ]; then
      opencode_plugin_deps "$d" "$3"
    fi
    return 0
  fi
  log "installing $2@$3 into $d"
  rm -rf "$d" && mkdir -p "$d" || return 1
  printf '{"name": "turnback-agent-%s", "private": true}\n' "$1" >"$d/package.json"
  if (cd "$d" && npm install --no-audit --no-fund --loglevel=error "$2@$3" >"$d/npm.log" 2>&1) \
    && [ -x "$d/node_modules/.bin/$4" ] && "$d/node_modules/.bin/$4" --version >/dev/null 2>&1; then
    [ "$1" = opencode ] && opencode_plugin_deps "$d" "$3"
    echo "$2@$3" >"$d/.turnback-installed"
    log "$1 $3 installed"
    return 0
  fi
  log "could not install $2@$3 (see $d/npm.log); its tests will be skipped"
  tail -n 5 "$d/npm.log" 2>/dev/null | sed 's/^/  /'
  return 1
}

mode=install
case "${1:-}" in
  --check) mode=check; shift ;;
  --print) mode=print; shift ;;
  -*) echo "usage: install-agents.sh [--check|--print|NAME...]" >&2; exit 2 ;;
esac
wanted="$*"

status=0
echo "$AGENTS" | {
  while read -r name package version command; do
    if [ -n "$wanted" ] && ! echo " $wanted " | grep -q " $name "; then continue; fi
    case $mode in
      check) ready "$name" "$package" "$version" "$command" || status=1 ;;
      print)
        state=missing
        ready "$name" "$package" "$version" "$command" && state=installed
        echo "$name $(dir_of "$name" "$package" "$version")/node_modules/.bin/$command $state" ;;
      install)
        if ! command -v npm >/dev/null 2>&1; then log "npm not found: no agent installed"; exit 0; fi
        install_one "$name" "$package" "$version" "$command" || true ;;
    esac
  done
  exit $status
}
