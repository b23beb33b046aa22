#!/bin/sh
# Puts the turnback server into the extension, for `make vsix`: bundled/wheels/ gets the turnback
# wheel built from this checkout and the pure-Python wheels it depends on (pygls, lsprotocol,
# platformdirs, attrs, cattrs, ...) for every supported CPython (3.10-3.13). On first start the
# extension installs them into a private environment; only pygit2 and cffi, whose wheels are
# built per CPython version and platform, come from the user's package index (see README.md).
#
# Usage: PYTHON=/path/to/python scripts/bundle-server.sh   (PYTHON needs `build` and pip)
set -eu
PYTHON=${PYTHON:-python3}
HERE=$(cd "$(dirname "$0")" && pwd)
CLIENT=$(dirname "$HERE")
REPO=$(dirname "$CLIENT")
OUT=$CLIENT/bundled/wheels
PYTHONS="3.10 3.11 3.12 3.13"

rm -rf "$CLIENT/bundled"
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$PYTHON" -m build --wheel --outdir "$tmp/turnback" "$REPO" >"$tmp/build.log" 2>&1 || {
  cat "$tmp/build.log" >&2
  echo "bundle-server: building the turnback wheel failed" >&2
  exit 1
}
wheel=$(ls "$tmp"/turnback/turnback-*.whl)
cp "$wheel" "$OUT/"

# The dependency closure for each CPython version (markers differ: exceptiongroup on 3.10, ...).
for version in $PYTHONS; do
  "$PYTHON" -m pip download -q --disable-pip-version-check --only-binary=:all: \
    --python-version "$version" --dest "$tmp/deps" "$wheel" >"$tmp/pip.log" 2>&1 || {
    cat "$tmp/pip.log" >&2
    echo "bundle-server: downloading the dependencies for CPython $version failed" >&2
    exit 1
  }
done
for dep in "$tmp"/deps/*-none-any.whl; do
  case $(basename "$dep") in
    turnback-*) ;;
    *) cp "$dep" "$OUT/" ;;
  esac
done
echo "bundle-server: $(ls "$OUT" | wc -l) wheels in $OUT:"
ls "$OUT" | sed 's/^/  /'
