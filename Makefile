# The README's commands. Each does all set-up on a fresh machine: uv (installed with pip when
# missing), then `uv sync` of the locked environment (all extras, dev tools), then the job.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
RUN := $(UV) run --locked

.PHONY: setup demo test lint typecheck unit audit docs bench store-bench dist install-local set-version

#: The one version source: the core's pyproject.toml (the integrations follow it; see set-version).
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -n 1)
PIP ?= python3 -m pip
DEMO_PATH ?= uniko-demo.db
DEFAULT_DATA := $(CURDIR)/../shared/data/locomo/locomo_dev.json

setup:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	@$(UV) sync --locked --quiet

# The demo's store stays at $(DEMO_PATH) (it prints the commands to explore it next).
demo: setup
	$(RUN) uniko demo --path $(DEMO_PATH)
	@echo "(in this checkout \`uniko\` is .venv/bin/uniko, or run it as: uv run uniko ...)"

# Wheels and sdists of the core and the three integrations, into ./dist.
dist: setup
	@rm -rf dist
	$(UV) build --all-packages --quiet -o dist
	@ls -1 dist

# Install the four packages from ./dist into the current Python ($(PIP)); dependencies come from the registry.
install-local: dist
	$(PIP) install --find-links dist "uniko-memory[all]==$(VERSION)" "langchain-uniko[all]==$(VERSION)" \
		"llama-index-retrievers-uniko==$(VERSION)" "llama-index-memory-uniko==$(VERSION)"

# Move all four packages to a new version: make set-version NEW=0.2.0
set-version:
	@test -n "$(NEW)" || { echo "usage: make set-version NEW=MAJOR.MINOR.PATCH" >&2; exit 2; }
	python3 scripts/set_version.py $(NEW)
	$(UV) lock --quiet

lint: setup
	$(RUN) ruff check .
	$(RUN) ruff format --check .

typecheck: setup
	$(RUN) mypy

# pytest exits 5 when it collects nothing: that is a failure here, never a silent pass.
unit: setup
	@$(RUN) pytest -q -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest collected no tests" >&2; exit 1; fi; exit $$rc

# Known vulnerabilities in the locked dependencies fail; an unreachable database is a notice.
audit: setup
	@UV="$(UV)" $(RUN) bash scripts/audit.sh

# The docs site (mkdocs.yml, docs/), warnings as errors, offline: the configuration reference must
# match the pydantic models (scripts/config_reference.py writes it), then `mkdocs build --strict`.
docs: setup
	$(RUN) python scripts/config_reference.py --check
	@NO_MKDOCS_2_WARNING=1 $(RUN) mkdocs build --strict --quiet && echo "docs built in site/"

test: lint typecheck unit audit docs

# make bench DATA=path/to/locomo10.json ARGS="--format locomo --systems uniko"
bench: setup
	@if [ -z "$(DATA)" ] && [ ! -e "$(DEFAULT_DATA)" ]; then \
		echo "make bench: no dataset given and the default one is missing ($(DEFAULT_DATA))." >&2; \
		echo "Pass one: make bench DATA=path/to/locomo10.json ARGS='--format locomo' (LoCoMo: github.com/snap-research/LoCoMo, CC BY-NC 4.0; see BENCHMARKS.md)." >&2; \
		exit 2; fi
	$(RUN) python benchmarks/run_bench.py $(if $(DATA),--data "$(DATA)") $(ARGS)

store-bench: setup
	$(RUN) python benchmarks/store_bench.py
