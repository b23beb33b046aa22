#!/bin/sh
# Installs what the end-to-end test of the VS Code extension needs (see README.md here):
#   - from Debian: chromium, git, ripgrep and the headers VS Code's native modules build with;
#   - code-server 4.100.3 (VS Code 1.100.3) from the npm registry, into a cache folder outside
#     the repository: $TURNBACK_E2E_CACHE (default ~/.cache/turnback-e2e)/code-server-4.100.3;
#   - playwright-core (no browsers) into client-vscode/e2e/node_modules, with `npm ci`.
# Needs Node 20 (code-server 4.100 refuses other versions) and, for apt-get, root or sudo.
# Only the package registries (Debian, npm) are used: nothing is downloaded from GitHub.
#
# Usage: setup.sh           install what is missing (exits at once when all is there)
#        setup.sh --check   exit 0 when everything is installed, 1 otherwise (installs nothing)
#        setup.sh --print-code-server   print the code-server executable's path
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
CS_VERSION=4.100.3
CACHE=${TURNBACK_E2E_CACHE:-${HOME}/.cache/turnback-e2e}
CS_DIR=$CACHE/code-server-$CS_VERSION
CS_BIN=$CS_DIR/node_modules/.bin/code-server
CHROMIUM=${TURNBACK_E2E_CHROMIUM:-/usr/bin/chromium}
APT_PACKAGES="chromium git ripgrep python3 build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev"

log() { echo "e2e setup: $*"; }
die() { echo "e2e setup: $*" >&2; exit 1; }

# A stamp names the lock file it was made from, so a changed lock file reinstalls.
lock_sum() { cksum <"$1" | cut -d' ' -f1; }
cs_ready() {
  [ -x "$CS_BIN" ] && [ -f "$CS_DIR/.turnback-e2e-installed" ] \
    && [ "$(cat "$CS_DIR/.turnback-e2e-installed")" = "$(lock_sum "$HERE/code-server/package-lock.json")" ]
}
pw_ready() {
  [ -f "$HERE/node_modules/playwright-core/package.json" ] && [ -f "$HERE/node_modules/.turnback-e2e-installed" ] \
    && [ "$(cat "$HERE/node_modules/.turnback-e2e-installed")" = "$(lock_sum "$HERE/package-lock.json")" ]
}
node20() { command -v node >/dev/null 2>&1 && node --version | grep -q '^v20\.'; }
missing_apt() {
  for p in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || printf '%s ' "$p"
  done
}

case "${1:-}" in
  --check)
    if cs_ready && pw_ready && [ -x "$CHROMIUM" ] && node20 && command -v git >/dev/null 2>&1; then exit 0; fi
    exit 1 ;;
  --print-code-server) echo "$CS_BIN"; exit 0 ;;
  "") ;;
  *) die "unknown argument: $1 (usage: setup.sh [--check|--print-code-server])" ;;
esac

node20 || die "code-server $CS_VERSION needs Node 20; found $(node --version 2>/dev/null || echo 'no node')."
# node-gyp builds against the installed Node's headers (else it downloads them from nodejs.org).
node_prefix=$(dirname "$(dirname "$(node -p process.execPath)")")
if [ -z "${npm_config_nodedir:-}" ] && [ -f "$node_prefix/include/node/node.h" ]; then
  export npm_config_nodedir="$node_prefix"
fi

# 1. Debian packages (apt-get only when one is missing).
missing=$(missing_apt)
if [ -n "$missing" ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "missing Debian packages ($missing) and not root: install them, or run as root"
    SUDO=sudo
  fi
  log "apt-get install $missing"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -qq $missing >/dev/null
fi
[ -x "$CHROMIUM" ] || die "no chromium at $CHROMIUM"

# 2. code-server, into the cache folder.
if cs_ready; then
  log "code-server $CS_VERSION already installed in $CS_DIR"
else
  log "installing code-server $CS_VERSION into $CS_DIR (builds VS Code's native modules: a few minutes)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  cp "$HERE/code-server/package.json" "$HERE/code-server/package-lock.json" "$CS_DIR/"
  cd "$CS_DIR"
  # Without scripts: npm may skip code-server's postinstall, which runs by hand below.
  npm ci --no-audit --no-fund --ignore-scripts
  # argon2 (loaded at start even with --auth none): its prebuilt binary comes from GitHub,
  # so it builds from source against the system Node headers.
  npm_config_yes=true npm rebuild argon2
  # @vscode/ripgrep's postinstall downloads rg from GitHub, but first looks for
  # $TMPDIR/vscode-ripgrep-cache-<version>/ripgrep-<tag>-<target>.tar.gz: seed that cache
  # (in a private TMPDIR) with Debian's rg.
  rg_version=$(node -e 'const s=require("./node_modules/code-server/lib/vscode/npm-shrinkwrap.json");process.stdout.write(s.packages["node_modules/@vscode/ripgrep"].version)')
  tmp=$CS_DIR/.tmp
  rm -rf "$tmp"; mkdir -p "$tmp/rg" "$tmp/vscode-ripgrep-cache-$rg_version"
  cp "$(command -v rg)" "$tmp/rg/rg"
  (cd "$tmp/rg" && tar czf ../rg.tar.gz rg)
  for tag in v13.0.0-4 v13.0.0-8 v13.0.0-10 v13.0.0-11 v13.0.0-12 v13.0.0-13 v14.1.1-1; do
    cp "$tmp/rg.tar.gz" "$tmp/vscode-ripgrep-cache-$rg_version/ripgrep-$tag-x86_64-unknown-linux-musl.tar.gz"
  done
  # code-server's own postinstall installs VS Code's dependencies (lib/vscode, and its
  # built-in extensions). It reads the Node version from npm's user agent, refuses root
  # without unsafe-perm, and its node-gyp runs through npx (npm_config_yes).
  cd node_modules/code-server
  TMPDIR=$tmp npm_config_user_agent="npm/$(npm --version) node/$(node --version) linux x64" \
    npm_config_unsafe_perm=true npm_config_yes=true npm_config_audit=false npm_config_fund=false \
    sh ./postinstall.sh
  rm -rf "$tmp"
  [ -x "$CS_BIN" ] || die "code-server did not install: no $CS_BIN"
  "$CS_BIN" --version >/dev/null || die "code-server does not start"
  lock_sum "$HERE/code-server/package-lock.json" >"$CS_DIR/.turnback-e2e-installed"
  log "code-server $("$CS_BIN" --version | head -n 1) installed"
fi

# 3. playwright-core, next to run.mjs. It downloads no browser (the test uses Debian's).
if pw_ready; then
  log "playwright-core already installed in $HERE/node_modules"
else
  log "npm ci (playwright-core) in $HERE"
  cd "$HERE"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
  lock_sum "$HERE/package-lock.json" >"$HERE/node_modules/.turnback-e2e-installed"
fi
log "ready: node client-vscode/e2e/run.mjs [path/to/turnback-X.vsix]"
