# The two set-up commands a new machine needs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint fmt schema bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/sema-rpc run --model replay/demo --format jsonl --cwd sema_rpc/data/demo-workspace "What is in this project?"

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check sema_rpc tests bench clients
	$(BIN)/ruff format --check sema_rpc tests bench clients
	$(BIN)/mypy

fmt: $(STAMP)
	$(BIN)/ruff format sema_rpc tests bench clients
	$(BIN)/ruff check --fix sema_rpc tests bench clients

schema: $(STAMP)
	$(BIN)/python -m sema_rpc.schema_gen

bench: $(STAMP)
	$(BIN)/python bench/bench_wire.py
	$(BIN)/python bench/bench_tools.py
	$(BIN)/python bench/bench_history.py
	$(BIN)/python bench/bench_history_stall.py
	$(BIN)/python bench/bench_pipeline.py

clean:
	rm -rf $(VENV) build *.egg-info
