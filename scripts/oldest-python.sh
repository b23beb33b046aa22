#!/usr/bin/env bash
# The unit and engine suites again under Python 3.10, the oldest turnback supports
# (pyproject.toml's requires-python), in a venv of its own (.venv310). Where this machine
# has no Python 3.10 (on PATH or from pyenv), it says so and skips.
set -euo pipefail
cd "$(dirname "$0")/.."

find_python() {
  for candidate in python3.10 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10*/bin/python3.10; do
    if "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 10)' >/dev/null 2>&1; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! python=$(find_python); then
  echo "skipping the Python 3.10 run: no Python 3.10 on this machine"
  exit 0
fi
venv=.venv310
if [ ! -f "$venv/.installed" ] || [ pyproject.toml -nt "$venv/.installed" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -e '.[test]'
  touch "$venv/.installed"
fi
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/unit tests/engine
