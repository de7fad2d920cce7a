# rein: `make run` sets everything up and runs the main job; `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint install system-deps bench bench-engine clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "rein needs Python >= 3.11 (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@bash scripts/codex-sdk.sh $(BIN)/python
	@touch $(STAMP)

install: $(STAMP)

# Optional system packages some tests use (bubblewrap); installed only where that is possible
# without asking (root with apt-get), otherwise those tests skip and say why.
system-deps:
	@bash scripts/system-deps.sh

run: $(STAMP)
	@bash scripts/demo.sh

# Any ruff finding or mypy --strict error fails the build before the suite runs.
lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/mypy

# A throwaway PostgreSQL server for the store tests (skipped when none can be started).
test: $(STAMP) system-deps lint
	@bash scripts/acpx.sh
	@eval "$$(bash scripts/postgres.sh start)"; \
	$(BIN)/python -m pytest; status=$$?; \
	bash scripts/postgres.sh stop; exit $$status

bench: $(STAMP)
	$(BIN)/python benchmarks/validate.py

bench-engine: $(STAMP)
	$(BIN)/python benchmarks/engine.py && $(BIN)/python benchmarks/map_parallel.py

clean:
	rm -rf $(VENV) .rein build src/*.egg-info
