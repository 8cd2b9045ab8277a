# Two commands on a fresh machine with Python 3.11: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-all lint bench serve clean

$(BIN)/python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or run: make PYTHON=python3 ...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# torch first, pinned: the CPU build on this machine's disk; a bare `torch` would pull a CUDA build.
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[train,router,rl,server,ray,dev]"
	# OpenRLHF's reward request code for the server tests; --no-deps: not its GPU stack.
	$(BIN)/pip install --quiet --no-deps "openrlhf==0.11.2"
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/rewardsmith score examples/mixed.jsonl -o out/mixed.scored.jsonl --library out/library.db --synthesize

# The reward server on 127.0.0.1:8000 (TOOL, PORT, ARGS to change: make serve TOOL=math).
TOOL ?= gsm8k
PORT ?= 8000
serve: $(STAMP)
	$(BIN)/rewardsmith serve --tool $(TOOL) --port $(PORT) --library out/library.db $(ARGS)

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
