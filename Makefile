# Two entry points for a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test lint typecheck bench install clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install -q -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

demo: install
	$(BIN)/python examples/train.py

lint: install
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

typecheck: install
	$(BIN)/mypy

test: install lint typecheck
	$(BIN)/python -m pytest

# `make bench` runs every benchmark; `make bench ONLY="sdk media"` runs some.
bench: install
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python benchmarks/run.py $(ONLY)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
