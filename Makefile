VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test test-slow lint bench clean scenarios postgres

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

# the service tests start a throwaway PostgreSQL server from the machine's binaries (initdb, pg_ctl)
postgres:
	@if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  echo "installing the PostgreSQL server for the service tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	fi

test: $(DEVSTAMP) lint postgres
	$(PY) -m pytest -q -n 2

test-slow: $(DEVSTAMP) postgres
	$(PY) -m pytest -q -m slow

scenarios: $(STAMP)
	APPORTION_CMD="$(VENV)/bin/apportion cycle" $(PY) ../shared/tools/run_scenarios.py

bench: $(DEVSTAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
