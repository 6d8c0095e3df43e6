# The two commands of the README are `make campaign` and `make test`; everything they need is
# installed by the targets below (venv, wheelhouse, base image, project images).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha256sum pyproject.toml | cut -c1-12)

.PHONY: venv images campaign lint test test-heavy validate clean-engine

venv: $(STAMP)
	@# The environment sets PYTHONDONTWRITEBYTECODE: without this every generator subprocess and
	@# every host-side ERP compiled the repo again. Incremental: only changed files are compiled.
	$(BIN)/python -m compileall -q erp_service agent_sandbox orchestrator tasks networks model_gateway erp_web erp_mcp >/dev/null
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test,ray]'
	touch $@

images: venv
	@command -v debootstrap >/dev/null 2>&1 || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
	$(BIN)/orchestrate images build

# The main job: a small campaign on the built-in defaults, in containers.
campaign: images
	$(BIN)/orchestrate campaign --label demo

# Lint and types over the whole tree (configured in pyproject.toml); `make test` runs them first.
lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

# CI's test run (kept under 30 minutes on 2 cores): everything but the tests marked `heavy`.
test: lint images
	TESTCONTAINERS_RYUK_DISABLED=true $(BIN)/pytest -m "not heavy" --durations=40

# The multi-minute end-to-end tests left out of `make test` (browser, Ray cluster, ...).
test-heavy: venv images
	TESTCONTAINERS_RYUK_DISABLED=true $(BIN)/pytest -m heavy

# The release gate (too long for CI's test run; run it on its own): every pack found under tasks/,
# five seeds, strict, clean and under every fault profile each pack declares, the alt control.
# The validation record (docs/publication.md) is written after every pack; a stopped or crashed
# run restarts where it stopped (packs already recorded for the same versions are not run again;
# delete the record, or give another VALIDATION_RECORD, to run everything afresh). Exit status as
# docs/exit-codes.md: 0 every control held, 1 a problem, 3 only attempts lost to the infrastructure.
# Attempts run across the whole matrix at once (VALIDATE_JOBS, default two per CPU) while the next
# seeds' scenarios are built beside them; it ends by printing its wall time and attempts per minute
# (also in the record's `run`).
VALIDATION_RECORD ?= runs/validation-record.json
VALIDATE_JOBS ?=
validate: images
	$(BIN)/orchestrate validate --tasks all --seeds 0,1,2,3,4 --strict --faults all \
		--record $(VALIDATION_RECORD) --resume $(if $(VALIDATE_JOBS),--jobs $(VALIDATE_JOBS))
