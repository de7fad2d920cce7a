# rein: `make run` sets everything up and runs the main job; `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run

.PHONY: run test lint install system-deps bench bench-engine pictures clean

# The environment itself; pip prints a line per package it fetches, so a first install
# shows its progress instead of sitting silent.
$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "rein needs Python >= 3.11 (set PYTHON=...)"; exit 1; }
	@echo "== creating $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	@echo "== upgrading pip"
	$(BIN)/python -m pip install --quiet --upgrade pip

# What running rein needs, and nothing else (`make run`).
$(RUN_STAMP): pyproject.toml | $(BIN)/python
	@echo "== installing rein and what it needs to run"
	$(BIN)/python -m pip install --progress-bar off -e .
	@touch $(RUN_STAMP)

# Running and testing: the test extras too (`make test`, `make lint`).
$(STAMP): pyproject.toml | $(BIN)/python
	@echo "== installing rein with the test extras"
	$(BIN)/python -m pip install --progress-bar off -e '.[test]'
	@bash scripts/codex-sdk.sh $(BIN)/python
	@touch $(STAMP) $(RUN_STAMP)

install: $(STAMP)

# Optional system packages some tests use (bubblewrap, Graphviz, Chromium, PostgreSQL, ...):
# installed as root with apt-get only where CI asks for it (CI=true) or after a yes on a
# terminal; otherwise it says how to install them, and those tests skip and say why.
system-deps:
	@bash scripts/system-deps.sh

run: $(RUN_STAMP)
	@bash scripts/demo.sh

# Any ruff finding or mypy --strict error fails the build before the suite runs.
lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/mypy

# A throwaway PostgreSQL server for the store tests (skipped when none can be started).
test: $(STAMP) system-deps lint
	@bash scripts/acpx.sh
	@bash scripts/axe.sh
	@bash scripts/agent-clis.sh
	@eval "$$(bash scripts/postgres.sh start)"; \
	$(BIN)/python -m pytest; status=$$?; \
	bash scripts/postgres.sh stop; exit $$status

bench: $(STAMP)
	$(BIN)/python benchmarks/validate.py

bench-engine: $(STAMP)
	$(BIN)/python benchmarks/engine.py && $(BIN)/python benchmarks/map_parallel.py

# The pictures in docs/images/, from an example plan and a real run (needs Graphviz).
pictures: $(RUN_STAMP)
	@bash scripts/pictures.sh

clean:
	rm -rf $(VENV) .rein build src/*.egg-info
