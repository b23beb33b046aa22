# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: agents install demo test test-python test-portable test-oldest-python test-vscode test-e2e e2e vsix lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

E2E := client-vscode/e2e

# The VS Code end-to-end test runs whenever its setup (`make e2e`) is present; CI always sets it up.
test: test-python test-portable test-vscode
	@if $(E2E)/setup.sh --check; then $(MAKE) test-e2e; \
	else echo "skipping the VS Code end-to-end test: 'make e2e' installs what it needs"; fi

test-python: $(STAMP)
	$(PY) -m ruff check server tests scripts bench
	$(PY) -m ruff format --check server tests scripts bench
	$(PY) -m pytest

# The engine and LSP suites again on the paths macOS and Windows take (no inotify, no syncfs).
test-portable: $(STAMP)
	TURNBACK_PORTABLE=1 $(PY) -m pytest -q -p no:cacheprovider \
		--ignore=tests/reliability --ignore=tests/agents \
		--ignore=tests/wire/test_wheel.py --ignore=tests/wire/test_neovim.py

# The unit and engine suites under Python 3.10, the oldest supported, where the machine has
# one (its own venv, .venv310; `.ci/run` runs it after `make test`).
test-oldest-python:
	scripts/oldest-python.sh

# The real agents (Claude Code, Codex, Gemini CLI, OpenCode) tests/agents/ drives; `make test`
# runs those tests whenever they are installed.
agents:
	scripts/install-agents.sh

# The VS Code extension: unit tests, then integration tests against the real server.
client-vscode/node_modules/.installed: client-vscode/package-lock.json
	cd client-vscode && npm ci --no-audit --no-fund
	touch $@

test-vscode: $(STAMP) client-vscode/node_modules/.installed
	cd client-vscode && npm run build && TURNBACK_PYTHON=$(abspath $(PY)) npm test

# A real VS Code (code-server 1.100) in headless Chromium, and the scenario run in it.
e2e:
	$(E2E)/setup.sh

# Twice: with the repository's server (turnback.server.path), then on a "clean machine" (fresh
# HOME, no turnback on PATH or in any Python it can see), where the extension installs its own.
test-e2e: $(STAMP) vsix
	node $(E2E)/run.mjs client-vscode/turnback-0.1.0.vsix
	node $(E2E)/run.mjs --clean-machine client-vscode/turnback-0.1.0.vsix

# The extension as an installable .vsix: client-vscode/turnback-<version>.vsix, with the turnback
# wheel and its pure-Python dependencies in it (the extension installs them on first start).
vsix: $(STAMP) client-vscode/node_modules/.installed
	PYTHON=$(abspath $(PY)) client-vscode/scripts/bundle-server.sh
	cd client-vscode && npm run package
	cd client-vscode && node scripts/ovsx-check.mjs  # Open VSX's CLI accepts it (a local stand-in registry)

lint: $(STAMP)
	$(PY) -m ruff check server tests scripts bench

format: $(STAMP)
	$(PY) -m ruff format server tests scripts bench
	$(PY) -m ruff check --fix server tests scripts bench

# Benchmarks against the snapshot methods other tools use (BENCH_SIZE=100000 for the targets).
bench: $(STAMP)
	$(PY) bench/run.py
	$(PY) bench/plot.py
	$(PY) bench/workspace.py 10000

clean:
	rm -rf $(VENV) .venv310 .pytest_cache .ruff_cache server/*.egg-info
	rm -rf client-vscode/node_modules client-vscode/dist client-vscode/bundled client-vscode/*.vsix
