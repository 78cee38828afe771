# Two entry points for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUM := $(shell cat pyproject.toml | cksum | cut -d' ' -f1)
# The demo needs the runtime extras only (numpy and video for examples/train.py, the server for the
# dashboard); the tests need the whole development stack (torch, lightning, playwright, ...).
# One virtual environment, one stamp per set: `make demo` after `make test` installs nothing.
DEMO_STAMP := $(VENV)/.installed-demo-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-$(SUM)

.PHONY: demo ui test lint typecheck bench install install-demo clean web chromium nginx ultralytics api-types

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(DEMO_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[server,numpy,video]'
	rm -f $(VENV)/.installed-demo-*
	touch $@

$(DEV_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-dev-* $(VENV)/.installed-demo-*
	touch $@ $(DEMO_STAMP)

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
api-types: $(DEV_STAMP)
	$(BIN)/python -m wisp.server.http.openapi > web/openapi.json
	cd web && npm ci --no-audit --no-fund && npm run gen:api

# System packages, said before they are installed (apt-get needs root):
# - Debian's chromium and chromium-driver, installed with apt-get: the browser tests drive them
#   (never a downloaded browser);
# - Debian's nginx binary for the stateless-servers test (three `wisp server` processes behind
#   it, run as the test user with its own prefix and config on a loopback port): the package is
#   downloaded and unpacked into .venv/nginx, never installed, so no service is enabled or started.
chromium:
	@command -v chromium >/dev/null || test -x /usr/bin/chromium || { \
	  echo "make: installing Debian packages chromium chromium-driver (browser tests) with apt-get (needs root)"; \
	  apt-get update -qq && apt-get install -y -qq chromium chromium-driver; }

NGINX := $(BIN)/nginx
$(NGINX): | $(BIN)/python
	@echo "make: unpacking Debian's nginx package into $(VENV)/nginx (not installed: no service is enabled)"
	rm -rf $(VENV)/nginx && mkdir -p $(VENV)/nginx
	cd $(VENV)/nginx && { apt-get download -qq nginx 2>/dev/null || \
	  { echo "make: apt-get update (the package lists are needed to download nginx)"; \
	    apt-get update -qq && apt-get download -qq nginx; }; }
	dpkg-deb -x $(VENV)/nginx/nginx_*.deb $(VENV)/nginx && rm $(VENV)/nginx/nginx_*.deb
	ln -sf ../nginx/usr/sbin/nginx $@
	$@ -v

nginx: $(NGINX)

# Ultralytics, for the test that runs its wandb callback through wisp's wandb module
# (tests/integrations/test_wandb_module.py), in a folder of its own that only that test's
# child process puts on sys.path: .venv/ultralytics, never the venv's site-packages.
# Ultralytics reads the torchvision distribution's version at import, and PyPI's torchvision
# is built for CUDA torch: an unpinned one replaces the CPU torch 2.13.0, and torch 2.13's
# own (0.28.0) does not load its C ops beside the CPU build (the callback never uses them).
# Installed there with --no-deps: ultralytics, torchvision (for its version), and what the
# callback's path imports that the dev extra lacks (ultralytics-thop, polars, opencv headless).
ULTRALYTICS_PKGS := ultralytics==8.4.190 torchvision==0.28.0 ultralytics-thop==2.2.3 \
  polars==2.1.0 polars-runtime-32==2.1.0 opencv-python-headless==5.0.0.93
ULTRALYTICS := $(VENV)/ultralytics/.installed-$(shell echo '$(ULTRALYTICS_PKGS)' | cksum | cut -d' ' -f1)
$(ULTRALYTICS): | $(BIN)/python
	@echo "make: installing $(ULTRALYTICS_PKGS) into $(VENV)/ultralytics (--no-deps; off sys.path)"
	rm -rf $(VENV)/ultralytics
	$(BIN)/python -m pip install -q --no-deps --target $(VENV)/ultralytics $(ULTRALYTICS_PKGS)
	touch $@

ultralytics: $(ULTRALYTICS)

install: $(DEV_STAMP) web

install-demo: $(DEMO_STAMP) web

# The demo's runs are written to ./wisp; afterwards `.venv/bin/wisp ui` (or `make ui`) serves
# them again, `.venv/bin/python` runs scripts that `import wisp` (no activation needed).
demo: install-demo
	$(BIN)/python examples/train.py
	@echo "make: the dashboard follows ./wisp; stop it with Ctrl-C, start it again with .venv/bin/wisp ui (or make ui)"
	$(BIN)/wisp ui

ui: install-demo
	$(BIN)/wisp ui

lint: install
	$(BIN)/ruff check src tests benchmarks examples compat
	$(BIN)/ruff format --check src tests benchmarks examples compat

typecheck: install
	$(BIN)/mypy

# .venv/bin first on PATH: the tests find the unpacked nginx (and the venv's `wisp`) there.
# Two pytest workers (pytest-xdist), a test file's tests on one worker (--dist loadfile):
# most tests wait on real servers and child processes, so two at once keep both cores busy.
test: install web chromium nginx ultralytics lint typecheck
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest -n 2 --dist loadfile

# `make bench` runs every benchmark; `make bench ONLY="sdk media"` runs some.
# Peers that clash with the dev stack (the `bench` extra: trackio) get a venv of their own,
# .venv/peers, holding only that extra's packages (read from pyproject.toml by benchmarks/_peers.py).
PEERS := $(VENV)/peers
PEERS_STAMP := $(PEERS)/.installed-$(SUM)
$(PEERS_STAMP): pyproject.toml | $(BIN)/python
	$(PY) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install -q $$($(BIN)/python benchmarks/_peers.py requirements bench)
	rm -f $(PEERS)/.installed-*
	touch $@

bench: install $(PEERS_STAMP)
	env -u PYTHONDONTWRITEBYTECODE WISP_BENCH_PEERS_PYTHON=$(PEERS)/bin/python \
	  $(BIN)/python benchmarks/run.py $(ONLY)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache web/node_modules src/wisp/server/static
