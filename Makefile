# Everything a new user or CI needs: `make demo` and `make test` set themselves up in .venv.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck unit clean

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

demo: $(VENV)/.stamp-runtime
	$(BIN)/python examples/flight_booking.py
	$(BIN)/python examples/tools.py

lint: $(VENV)/.stamp-dev
	$(BIN)/ruff check .

typecheck: $(VENV)/.stamp-dev
	$(BIN)/mypy

unit: $(VENV)/.stamp-dev
	$(BIN)/pytest

test: lint typecheck unit

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
