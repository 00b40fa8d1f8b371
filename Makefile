# The two set-up commands a new machine needs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
VSCODE := clients/vscode
VSCODE_STAMP := $(VSCODE)/node_modules/.installed

.PHONY: demo test lint fmt schema bench clean vsix test-vscode

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/sema-rpc run --model replay/demo --format jsonl --cwd sema_rpc/data/demo-workspace "What is in this project?"

test: $(STAMP) $(VSCODE_STAMP)
	$(BIN)/python -m pytest
	cd $(VSCODE) && npm test

lint: $(STAMP) $(VSCODE_STAMP)
	$(BIN)/ruff check sema_rpc tests bench clients
	$(BIN)/ruff format --check sema_rpc tests bench clients
	$(BIN)/mypy
	cd $(VSCODE) && npx tsc --noEmit -p .

fmt: $(STAMP)
	$(BIN)/ruff format sema_rpc tests bench clients
	$(BIN)/ruff check --fix sema_rpc tests bench clients

schema: $(STAMP)
	$(BIN)/python -m sema_rpc.schema_gen
	$(BIN)/python -m sema_rpc.ts_gen

bench: $(STAMP)
	$(BIN)/python bench/bench_wire.py
	$(BIN)/python bench/bench_tools.py
	$(BIN)/python bench/bench_history.py
	$(BIN)/python bench/bench_pipeline.py

# The VS Code extension (clients/vscode): npm packages pinned by its package-lock.json.
$(VSCODE_STAMP): $(VSCODE)/package-lock.json
	cd $(VSCODE) && npm ci --no-audit --no-fund
	touch $(VSCODE_STAMP)

vsix: $(VSCODE_STAMP)
	cd $(VSCODE) && npm run package

# End to end in a real VS Code (code-server + headless Chromium); installs them on first use.
test-vscode: $(STAMP) vsix
	node $(VSCODE)/test/e2e/run.mjs

clean:
	rm -rf $(VENV) build *.egg-info
