# The README's commands. Each does all set-up on a fresh machine: uv (installed with pip when
# missing), then `uv sync` of the locked environment (all extras, dev tools), then the job.
SHELL := /bin/bash
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
RUN := $(UV) run --locked

.PHONY: setup demo test lint typecheck unit audit docs bench store-bench

setup:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv
	@$(UV) sync --locked --quiet

demo: setup
	$(RUN) uniko demo

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

bench: setup
	$(RUN) python benchmarks/run_bench.py

store-bench: setup
	$(RUN) python benchmarks/store_bench.py
