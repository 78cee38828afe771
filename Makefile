# Two entry points for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint typecheck bench install clean web chromium nginx api-types

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

# The dashboard: built by Vite into the package (src/wisp/server/static, not committed).
WEB_OUT := src/wisp/server/static/index.html
WEB_SRC := web/package.json web/package-lock.json web/index.html web/vite.config.ts web/openapi.json $(wildcard web/src/*) $(wildcard web/src/*/*)

$(WEB_OUT): $(WEB_SRC)
	cd web && npm ci --no-audit --no-fund && npm run build

web: $(WEB_OUT)

# The HTTP API's shapes, regenerated from the server's declarations (src/wisp/server/schemas/runs.py
# and the @endpoint routes): web/openapi.json, then web/src/api.gen.ts from it. Both are
# committed; the Vite build (npm prebuild) regenerates api.gen.ts from web/openapi.json, and
# tests/server/test_types.py fails when either is stale.
api-types: $(STAMP)
	$(BIN)/python -m wisp.server.http.openapi > web/openapi.json
	cd web && npm ci --no-audit --no-fund && npm run gen:api

# Browser tests drive Debian's Chromium (never a downloaded browser).
chromium:
	command -v chromium || (apt-get update && apt-get install -y chromium chromium-driver)

# The stateless-servers test puts three `wisp server` processes behind Debian's nginx
# (run as the test user, with its own prefix and config, on a loopback port).
nginx:
	command -v nginx || test -x /usr/sbin/nginx || (apt-get update && apt-get install -y nginx)

install: $(STAMP) web

demo: install web
	$(BIN)/python examples/train.py
	$(BIN)/wisp ui

lint: install
	$(BIN)/ruff check src tests benchmarks examples compat
	$(BIN)/ruff format --check src tests benchmarks examples compat

typecheck: install
	$(BIN)/mypy

test: install web chromium nginx lint typecheck
	$(BIN)/python -m pytest

# `make bench` runs every benchmark; `make bench ONLY="sdk media"` runs some.
bench: install
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python benchmarks/run.py $(ONLY)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache web/node_modules src/wisp/server/static
