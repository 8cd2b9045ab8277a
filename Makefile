# Two commands on a fresh machine with Python 3.11: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-all lint bench clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first, pinned: the CPU build on this machine's disk; a bare `torch` would pull a CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[train,router,rl,dev]"
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/rewardsmith score examples/mixed.jsonl -o out/mixed.scored.jsonl --library out/library.db

test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow and not network and not gpu"

test-all: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/bench_math.py
	$(BIN)/python bench/bench_routing.py

clean:
	rm -rf $(VENV) out build *.egg-info
