# Everything a new user or CI needs: `make demo` and `make test` set themselves up in .venv.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit clean ui-node

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-installs only when pyproject.toml changes.
$(VENV)/.stamp-runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.stamp-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.stamp-runtime

# What the offline examples need beyond the runtime (the provider tour reads the recorded traffic, YAML).
$(VENV)/.stamp-demo: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[demo]'
	touch $@ $(VENV)/.stamp-runtime

demo: $(VENV)/.stamp-demo
	$(BIN)/python examples/flight_booking.py
	$(BIN)/python examples/tools.py
	$(BIN)/python examples/retrieval.py

lint: $(VENV)/.stamp-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.stamp-dev
	$(BIN)/mypy

# The npm `ai` package that tests/ui reads recorded UI message streams with (pinned by its lock file).
UI_NODE := tests/ui/node
$(UI_NODE)/node_modules/.stamp: $(UI_NODE)/package.json $(UI_NODE)/package-lock.json
	npm ci --prefix $(UI_NODE) --no-audit --no-fund --loglevel=error
	touch $@

ui-node: $(UI_NODE)/node_modules/.stamp

# Without npm the UI stream tests skip (under CI=true they fail instead).
unit: $(VENV)/.stamp-dev
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory ui-node; fi
	$(BIN)/pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis $(UI_NODE)/node_modules

# Benchmarks (benchmarks/README.md): their own venv with every library compared; not part of `make test`.
# BENCH_ARGS passes options, e.g. `make bench-quick BENCH_ARGS="--only S1,S2 --libs raw,chatclient"`.
BENCH_VENV := benchmarks/.venv
BENCH_BIN  := $(BENCH_VENV)/bin

.PHONY: bench bench-quick

$(BENCH_BIN)/python:
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_BIN)/python -m pip install -qq --upgrade pip

# Re-installs only when pyproject.toml or the pins change.
$(BENCH_VENV)/.stamp-bench: pyproject.toml benchmarks/requirements.txt | $(BENCH_BIN)/python
	$(BENCH_BIN)/python -m pip install -qq -e . -r benchmarks/requirements.txt
	touch $@

bench: $(BENCH_VENV)/.stamp-bench
	$(BENCH_BIN)/python -m benchmarks.run $(BENCH_ARGS)

bench-quick: $(BENCH_VENV)/.stamp-bench
	$(BENCH_BIN)/python -m benchmarks.run --quick $(BENCH_ARGS)

# Tool search: tokens per turn with and without it (deterministic); exits 1 when a target is missed.
.PHONY: bench-tool-search
bench-tool-search: $(BENCH_VENV)/.stamp-bench
	$(BENCH_BIN)/python -m benchmarks.tool_search $(BENCH_ARGS)
