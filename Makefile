VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test test-slow lint bench clean scenarios

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e .
	touch $@

$(DEVSTAMP): $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e '.[dev]'
	touch $@ $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/apportion demo

lint: $(DEVSTAMP)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

test: $(DEVSTAMP) lint
	$(PY) -m pytest -q -n 2

test-slow: $(DEVSTAMP)
	$(PY) -m pytest -q -m slow

scenarios: $(STAMP)
	APPORTION_CMD="$(VENV)/bin/apportion cycle" $(PY) ../shared/tools/run_scenarios.py

bench: $(DEVSTAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
