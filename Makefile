VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

.PHONY: demo test test-slow lint bench clean scenarios postgres vendor chromium test-browser

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# the compiled dataclass methods' cache (lean_dataclass.py), written once here; runs add to it
KEPT_CODE := $(PY) -c "from apportion.lean_dataclass import write_kept_code; write_kept_code()"

$(STAMP): $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e .
	$(KEPT_CODE)
	touch $@

$(DEVSTAMP): $(VENV)/bin/python pyproject.toml
	$(PIP) install --quiet -e '.[dev]'
	$(KEPT_CODE)
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

test: $(DEVSTAMP) lint postgres chromium
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=15

test-slow: $(DEVSTAMP) postgres
	$(PY) -m pytest -q -m slow

# The front-end libraries of the dashboard and the report, vendored from npm at pinned versions into the package's static
# files with their licences (committed: no CDN, no bundler, no node when the service runs).
HTMX_VERSION := 2.0.11
UPLOT_VERSION := 1.6.32
VENDOR_DIR := src/apportion/web/static/vendor
vendor:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cd "$$tmp" && \
	  npm pack --silent htmx.org@$(HTMX_VERSION) uplot@$(UPLOT_VERSION) >/dev/null && \
	  mkdir htmx uplot && tar -xzf htmx.org-$(HTMX_VERSION).tgz -C htmx && tar -xzf uplot-$(UPLOT_VERSION).tgz -C uplot && \
	  cd "$(CURDIR)" && mkdir -p $(VENDOR_DIR) && \
	  cp "$$tmp/htmx/package/dist/htmx.min.js" $(VENDOR_DIR)/htmx.min.js && \
	  cp "$$tmp/htmx/package/LICENSE" $(VENDOR_DIR)/LICENSE.htmx && \
	  cp "$$tmp/uplot/package/dist/uPlot.iife.min.js" $(VENDOR_DIR)/uPlot.iife.min.js && \
	  cp "$$tmp/uplot/package/dist/uPlot.min.css" $(VENDOR_DIR)/uPlot.min.css && \
	  cp "$$tmp/uplot/package/LICENSE" $(VENDOR_DIR)/LICENSE.uplot && \
	  printf 'htmx.org %s\nuplot %s\n' $(HTMX_VERSION) $(UPLOT_VERSION) > $(VENDOR_DIR)/VERSIONS && \
	  echo "vendored htmx.org $(HTMX_VERSION) and uplot $(UPLOT_VERSION) into $(VENDOR_DIR)"

# The browser tests drive Debian's Chromium (Playwright's own browser download does not work here).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  echo "installing Debian's chromium for the browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

test-browser: $(DEVSTAMP) chromium postgres
	$(PY) -m pytest -q tests/service/dashboard

scenarios: $(STAMP)
	APPORTION_CMD="$(VENV)/bin/apportion cycle" $(PY) ../shared/tools/run_scenarios.py

bench: $(DEVSTAMP)
	$(KEPT_CODE)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
