# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test lint format bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

test: $(STAMP)
	$(PY) -m ruff check server tests scripts
	$(PY) -m ruff format --check server tests scripts
	$(PY) -m pytest

lint: $(STAMP)
	$(PY) -m ruff check server tests scripts

format: $(STAMP)
	$(PY) -m ruff format server tests scripts
	$(PY) -m ruff check --fix server tests scripts

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache server/*.egg-info
