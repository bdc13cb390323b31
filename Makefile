# Two commands: `make run` (serve with the embedded defaults) and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
TEST_WORKERS ?= 2
STAMP := $(VENV)/.requirements.stamp

.PHONY: venv browser promtool nginx lint migrate run test test-embedded schemathesis bench clean

# Embedded mode for these targets only: without LEDGER_MASTER_KEY a master key file is
# generated under var/ (docs/custody.md); production commands get no such default.
migrate run test test-embedded bench: export LEDGER_EMBEDDED = 1

$(STAMP): requirements.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

venv: $(STAMP)

# Debian's headless chromium and its driver for the browser tests (tests/browser/, Selenium
# pointed at /usr/bin/chromium and /usr/bin/chromedriver): nothing is downloaded at test time.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || (apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null)) || echo "chromium unavailable: the browser tests will fail"

# Debian's prometheus (promtool and the server): tests/test_metrics_rules.py checks the alert rules and
# the Grafana dashboard's queries with Prometheus' own parser and against a live scrape (skipped when missing).
promtool:
	@command -v promtool >/dev/null || (apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends prometheus >/dev/null)) || echo "promtool unavailable: the alert-rule tests will fail"

# Debian's nginx in front of gunicorn for tests/test_behind_nginx.py (the client's address behind a
# proxy: docs/configuration.md); the test runs it from a temp dir, never as the system's service.
nginx:
	@command -v nginx >/dev/null || test -x /usr/sbin/nginx || (apt-get install -y -q --no-install-recommends nginx >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends nginx >/dev/null)) || echo "nginx unavailable: the tests behind nginx will fail"

migrate: venv
	$(BIN)/python manage.py migrate --noinput -v0

# Local SVM node on :8899, a Celery worker (+ beat), and the API on :$(PORT), kept up: a part
# that dies is restarted; Ctrl-C or SIGTERM stops everything (docs/operations.md).
run: migrate
	$(BIN)/python manage.py collectstatic --noinput -v0
	PORT=$(PORT) $(BIN)/python scripts/run_embedded.py

# ruff (ruff.toml): pyflakes and the one line limit; `make test` runs it first (docs/style.md).
lint: venv
	$(BIN)/ruff check -q .

# The whole suite, in parallel. DATABASE_URL / REDIS_URL choose PostgreSQL and Redis
# (.ci/run sets both); without them it runs on the embedded defaults.
test: venv browser promtool nginx lint
	$(BIN)/python scripts/with_localnet.py $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile -q $(PYTEST_ARGS)

# The same suite forced onto the embedded defaults (SQLite, filesystem broker).
test-embedded: venv browser promtool nginx lint
	env -u DATABASE_URL -u REDIS_URL LEDGER_VAR_DIR=$(CURDIR)/var/test-embedded $(BIN)/python scripts/with_localnet.py $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile -q $(PYTEST_ARGS)

# schemathesis (every check) over the whole OpenAPI against a throwaway server (SQLite, own
# local node and worker, a tenant key, records seeded through the API): scripts/schemathesis_run.py,
# docs/api.md. SCHEMATHESIS_MAX_EXAMPLES bounds it.
schemathesis: venv
	env -u DATABASE_URL -u REDIS_URL $(BIN)/python scripts/schemathesis_run.py $(SCHEMATHESIS_ARGS)

# wrk (Debian) measures HTTP endpoints without taking the cores from the server.
bench: venv
	@command -v wrk >/dev/null || (apt-get install -y -q wrk >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q wrk >/dev/null)) || echo "wrk unavailable: benchmarks use the Python load generator"
	$(BIN)/python bench/run.py

# The onchain programs (programs/, docs/programs.md): C compiled to SBF by Debian's clang
# (installed when missing, like wrk above), linked by programs/toolchain; deterministic.
# The built .so files are committed, so `make run` and `make test` need no compiler.
.PHONY: programs
programs:
	@command -v clang >/dev/null || (apt-get install -y -q clang >/dev/null 2>&1 || (apt-get update -q >/dev/null && apt-get install -y -q clang >/dev/null)) || (echo "clang unavailable: install Debian's clang to build the programs" >&2; exit 1)
	$(PYTHON) -m programs.toolchain.build

clean:
	rm -rf var/test-embedded var/broker
