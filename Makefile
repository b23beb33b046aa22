# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test test-python test-vscode vsix lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

test: test-python test-vscode

test-python: $(STAMP)
	$(PY) -m ruff check server tests scripts
	$(PY) -m ruff format --check server tests scripts
	$(PY) -m pytest

# The VS Code extension: unit tests, then integration tests against the real server.
client-vscode/node_modules/.installed: client-vscode/package-lock.json
	cd client-vscode && npm ci --no-audit --no-fund
	touch $@

test-vscode: $(STAMP) client-vscode/node_modules/.installed
	cd client-vscode && npm run build && TURNBACK_PYTHON=$(abspath $(PY)) npm test

# The extension as an installable .vsix: client-vscode/turnback-<version>.vsix
vsix: client-vscode/node_modules/.installed
	cd client-vscode && npm run package

lint: $(STAMP)
	$(PY) -m ruff check server tests scripts

format: $(STAMP)
	$(PY) -m ruff format server tests scripts
	$(PY) -m ruff check --fix server tests scripts

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache server/*.egg-info
	rm -rf client-vscode/node_modules client-vscode/dist client-vscode/*.vsix
