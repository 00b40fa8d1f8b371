# The two set-up commands a new machine needs: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
VSCODE := clients/vscode
VSCODE_STAMP := $(VSCODE)/node_modules/.installed

.PHONY: bytecode demo test test-slow test-tools lint lint-lua fmt schema generate spec bench clean vsix dist test-vscode soak

# The editable install is two plain paths in a .pth file (the checkout and clients/python),
# not setuptools' default import hook, whose own imports (pathlib, re, importlib.util…) cost
# every Python process ~20 ms at start — every server the suite starts paid them. A module
# added to either package imports without a reinstall (CONTRIBUTING.md, "The dev install").
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]' --config-settings editable_mode=compat
	$(BIN)/python -c "$$ADD_CLIENT_PATH" '$(CURDIR)/clients/python'
	$(MAKE) --no-print-directory bytecode
	touch $(STAMP)

# The compat editable install puts the checkout on sys.path only; sema_client lives in
# clients/python, added to the same .pth (pip uninstall removes that file with the rest).
define ADD_CLIENT_PATH
import pathlib, sys, sysconfig
pth, = pathlib.Path(sysconfig.get_path("purelib")).glob("__editable__.sema_rpc-*.pth")
lines = pth.read_text().splitlines()
lines += [] if sys.argv[1] in lines else [sys.argv[1]]
pth.write_text("\n".join(lines) + "\n")
endef
export ADD_CLIENT_PATH

# Our modules' bytecode, compiled ahead as pip does for an installed wheel: an editable
# install compiles nothing, and with PYTHONDONTWRITEBYTECODE set every start would compile
# every module again. Python ignores a .pyc whose source changed since (then it compiles
# that module at each start until this runs again): `make test` runs it first, so the
# hundreds of servers the suite starts never compile what an edit changed.
bytecode:
	$(BIN)/python -m compileall -q -j 0 sema_rpc clients/python/sema_client tests bench

# The demo prints the answer as text (FORMAT=jsonl: the wire's event stream) and keeps its
# session in a temporary SEMA_ROOT, removed afterwards: it never writes into ~/.sema.
FORMAT ?= text
DEMO_PROMPT := What is in this project?

demo: $(STAMP)
	@echo '$$ sema-rpc run --model replay/demo --format $(FORMAT) "$(DEMO_PROMPT)"' >&2
	@root=$$(mktemp -d) && SEMA_ROOT=$$root $(BIN)/python -m sema_rpc run --model replay/demo \
		--format $(FORMAT) "$(DEMO_PROMPT)"; rc=$$?; rm -rf "$$root"; exit $$rc

# The suite on TEST_WORKERS parallel workers (pytest-xdist): most tests wait on a server
# subprocess, so one worker more than the cores keeps them busy; each worker more collects
# every module again and makes the servers contend (on two cores, 4 workers cost ~15 % more
# CPU than 3 for the same tests). TEST_WORKERS=0 runs it in one process.
# Every test is parallel-safe (CONTRIBUTING.md, "Tests in parallel").
# Tests marked `slow` (minutes of real installs) run in `make test-slow`; CI runs both.
TEST_WORKERS ?= 3

# The extension's unit tests run beside pytest (their output printed after it): the suite is
# CPU-bound on two cores, and they fill the cores pytest leaves idle while it starts its
# workers and while its last long tests finish. pytest may write its assertion-rewritten
# bytecode (PYTHONDONTWRITEBYTECODE emptied), written once ahead by
# tests/support/assertion_cache.py: otherwise on a fresh checkout every worker rewrites every
# test module at the same moment.
test: $(STAMP) $(VSCODE_STAMP) test-tools bytecode
	@log=$$(mktemp); { (cd $(VSCODE) && npm test >"$$log" 2>&1); echo $$? >"$$log.rc"; } & \
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m tests.support.assertion_cache; \
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal -m "not slow"; \
	rc=$$?; wait; cat "$$log"; npm_rc=$$(cat "$$log.rc"); rm -f "$$log" "$$log.rc"; \
	[ $$rc -eq 0 ] && [ $$npm_rc -eq 0 ]

# The slow tests `make test` leaves out (marked `slow`): tests/dist builds the release and
# installs it with uv tool, pipx and uvx outside the checkout; the Neovim plugin's
# `:Sema install` does a real pip install (minutes).
test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

lint: $(STAMP) $(VSCODE_STAMP) lint-lua
	$(BIN)/ruff check sema_rpc tests bench clients
	$(BIN)/ruff format --check sema_rpc tests bench clients
	$(BIN)/mypy
	cd $(VSCODE) && npx tsc --noEmit -p .

# What the tests drive besides Python packages: tmux (the login flow in a real terminal),
# from Debian's tmux package (installed when missing).
test-tools:
	@command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -q tmux >/dev/null; } \
		|| { echo "tmux is missing: install Debian's tmux package"; exit 1; }

# The Neovim plugin's Lua: luacheck, from Debian's lua-check package (installed when missing).
lint-lua:
	@command -v luacheck >/dev/null || { apt-get update -qq && apt-get install -y -q lua-check >/dev/null; } \
		|| { echo "luacheck is missing: install Debian's lua-check package"; exit 1; }
	cd clients/neovim && luacheck --no-color --formatter plain .

fmt: $(STAMP)
	$(BIN)/ruff format sema_rpc tests bench clients
	$(BIN)/ruff check --fix sema_rpc tests bench clients

# Everything generated from sema_rpc/protocol.py, and the built-in tools' input schemas
# (each has a drift test naming this target).
generate: $(STAMP)
	$(BIN)/python -m sema_rpc.schema_gen
	$(BIN)/python -m sema_rpc.ts_gen
	$(BIN)/python -m sema_rpc.plain_gen
	$(BIN)/python -m sema_rpc.client_gen
	$(BIN)/python -m sema_rpc.spec_tables
	$(BIN)/python -m sema_rpc.tools.schemas

schema: generate

# Re-capture the example exchange in protocol/README.md from the current build.
spec: $(STAMP)
	$(BIN)/python -m tests.support.spec_example --write

# The interleaving suite's long profile (tests/stateful/soak.py), for a nightly run: seeded
# random interleavings against a real server for SOAK_MINUTES, then what it covered.
SOAK_MINUTES ?= 20
SOAK_SEED ?= 26

soak: $(STAMP)
	$(BIN)/python -m tests.stateful.soak --minutes $(SOAK_MINUTES) --seed $(SOAK_SEED)

bench: $(STAMP)
	$(BIN)/python bench/bench_startup.py --imports
	$(BIN)/python bench/bench_wire.py
	$(BIN)/python bench/bench_tools.py
	$(BIN)/python bench/bench_history.py
	$(BIN)/python bench/bench_history_stall.py
	$(BIN)/python bench/bench_message_complete.py
	$(BIN)/python bench/bench_pipeline.py
	$(BIN)/python bench/bench_recorder.py
	$(BIN)/python bench/bench_view.py
	$(BIN)/python bench/bench_checkpoints.py
	$(BIN)/python bench/bench_neovim.py
	$(BIN)/python bench/bench_acp.py
	$(BIN)/python bench/bench_lifeline.py
	$(BIN)/python bench/bench_sandbox.py

# The VS Code extension (clients/vscode): npm packages pinned by its package-lock.json.
$(VSCODE_STAMP): $(VSCODE)/package-lock.json
	cd $(VSCODE) && npm ci --no-audit --no-fund
	touch $(VSCODE_STAMP)

vsix: $(VSCODE_STAMP)
	cd $(VSCODE) && npm run package

# A release: the wheel and the sdist (checked with twine) and the .vsix, in dist/.
VERSION = $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
dist: $(STAMP) vsix
	rm -rf dist build
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*
	cp $(VSCODE)/sema-vscode.vsix dist/sema-rpc-$(VERSION).vsix
	@ls -l dist

# End to end in a real VS Code (code-server + headless Chromium); installs them on first use.
# install.mjs: no sema-rpc anywhere, the extension installs the wheel its .vsix ships.
# Then `sema-rpc view`'s page in the same Chromium, required here (never skipped) unless the
# set-up script says Chromium cannot be installed on this machine (exit 3).
test-vscode: $(STAMP) vsix
	node $(VSCODE)/test/e2e/run.mjs
	node $(VSCODE)/test/e2e/trust.mjs
	node $(VSCODE)/test/e2e/attach.mjs
	node $(VSCODE)/test/e2e/install.mjs
	@rc=0; bash $(VSCODE)/scripts/setup-e2e.sh >/dev/null || rc=$$?; \
	if [ $$rc = 3 ]; then echo "*** view browser test SKIPPED: chromium cannot be installed here ***"; \
	elif [ $$rc != 0 ]; then exit $$rc; \
	else SEMA_VIEW_BROWSER=required $(BIN)/python -m pytest -q -p no:randomly tests/record/test_view_browser.py; fi

clean:
	rm -rf $(VENV) build dist *.egg-info
