# Quick start: `make demo` (SQLite, inline tasks, no services) and `make test` (Postgres + Redis).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PG_URL ?= postgres://postgres@127.0.0.1:5432/finops
REDIS_TEST_URL ?= redis://127.0.0.1:6379/15
HOST ?= 127.0.0.1
PORT ?= 8000
# Python's bytecode cache on, whatever the shell says (a CI image may set PYTHONDONTWRITEBYTECODE=1): without it,
# every process of a run — pytest's workers, each `manage.py` and Celery worker a test starts — compiles the
# project from source again, and pytest rewrites the asserts of ~540 test modules each time (~10 s a process).
export PYTHONDONTWRITEBYTECODE :=

.PHONY: install focus-validator demo lint format test test-fast guide-images services system-packages chromium bench bench-ingest bench-report bench-pages-db bench-pages bench-alerts bench-scorecard bench-whatif bench-load check clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The FinOps Foundation's focus-validator 2.x (FOCUS 1.2 rules, shipped in the package: run with --block-download),
# which tests/test_focus_export*.py run on the FOCUS export. Its own venv, never the product's: it needs Python 3.12
# and pins numpy<2, which only pyarrow<20 builds against. The interpreter: FOCUS_PYTHON=…, else pyenv's 3.12 (the
# highest installed), else a system python3.12. A venv of another Python (validator 1.0.0's) is rebuilt.
FOCUS_VALIDATOR_VERSION := 2.2.1
FOCUS_VENV := .venv-focus
FOCUS_STAMP := $(FOCUS_VENV)/.installed-$(FOCUS_VALIDATOR_VERSION)
FOCUS_PYTHON ?= $(or $(lastword $(sort $(wildcard $(or $(PYENV_ROOT),$(HOME)/.pyenv)/versions/3.12*/bin/python3.12))),\
	$(firstword $(wildcard /usr/local/bin/python3.12 /usr/bin/python3.12)))

$(FOCUS_STAMP):
	@test -n "$(FOCUS_PYTHON)" || { echo "focus-validator $(FOCUS_VALIDATOR_VERSION) needs Python 3.12: none found" \
		"(pyenv install 3.12, or apt-get install python3.12; or make FOCUS_PYTHON=/path/to/python3.12)"; exit 1; }
	$(FOCUS_VENV)/bin/python -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null || \
		{ rm -rf $(FOCUS_VENV) && $(FOCUS_PYTHON) -m venv $(FOCUS_VENV); }
	$(FOCUS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(FOCUS_VENV)/bin/python -m pip install --quiet 'focus-validator==$(FOCUS_VALIDATOR_VERSION)' 'pyarrow<20'
	touch $(FOCUS_STAMP)

focus-validator: $(FOCUS_STAMP)

# Demo: writes .env (DEBUG, keys) once, migrates SQLite, loads the demo organisation, serves it at http://HOST:PORT.
# The platform team's Slack channel posts to the demo's stand-in (/demo/slack/ of the demo itself), a loopback
# address the egress policy refuses unless allowed: the demo allows exactly that host (docs/alerts.md).
DEMO_SLACK = FINOPS_DEMO_SLACK=1 FINOPS_EGRESS_ALLOWED_NETWORKS=127.0.0.1/32
demo: install
	DEBUG=1 $(BIN)/python manage.py demo_env
	$(BIN)/python manage.py migrate --no-input -v 0
	$(DEMO_SLACK) $(BIN)/python manage.py load_demo --url http://$(HOST):$(PORT)
	@echo "Serving the demo at http://$(HOST):$(PORT) (PORT=… and HOST=… change it; Ctrl-C stops it)"
	$(DEMO_SLACK) $(BIN)/python manage.py runserver $(HOST):$(PORT)

# Start the local Postgres and Redis when they are installed but not answering.
services:
	@pg_isready -q -h 127.0.0.1 -p 5432 || { pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start && \
		for i in $$(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done; }
	@redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || { redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no && \
		for i in $$(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done; }

# The system packages the tests need, installed only when one is missing (CI runs as root, no stdin): Debian's
# Chromium for the browser tests (Playwright drives it; no browser download); Pango and a font for WeasyPrint's
# PDFs; poppler-utils (pdftoppm, pdftotext) to look at them. Each entry: package:file that proves it is there.
SYSTEM_PACKAGES ?= chromium:/usr/bin/chromium libpango-1.0-0:/usr/lib/$(shell uname -m)-linux-gnu/libpango-1.0.so.0 \
	libpangoft2-1.0-0:/usr/lib/$(shell uname -m)-linux-gnu/libpangoft2-1.0.so.0 \
	fonts-dejavu-core:/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf poppler-utils:/usr/bin/pdftoppm

system-packages:
	@missing=""; for entry in $(SYSTEM_PACKAGES); do test -e "$${entry#*:}" || missing="$$missing $${entry%%:*}"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi

# The old name of the target above (it installed only Chromium).
chromium: system-packages

# The whole suite (what CI runs), on TEST_WORKERS pytest-xdist workers: one more than the machine's cores (3 here),
# since some of its tests wait rather than compute (Celery workers and beats, programs in their own process, fault
# tests' cuts, Chromium): on this 2-core machine 2 workers took 427 s, 3 workers 373 s with both cores busy (17 of
# 748 core-seconds idle; 28 Nov 2026, quiet). `make test-fast` has almost nothing that waits, so it
# runs one worker per core (FAST_WORKERS: 3 took 128.7 s against 2's 122.6). 1 runs serially. Each worker has its
# own test database and Redis database (finops/settings_test.py) and keeps a test file whole; a test that flushes
# the database gives the migrations' seed back at once (tests/conftest.py), so files may run in any order.
CORES := $(shell nproc 2>/dev/null || echo 2)
TEST_WORKERS ?= $(shell echo $$(( $(CORES) + 1 )))
FAST_WORKERS ?= $(CORES)
parallel = $(if $(filter-out 1,$(1)),-n $(1) --dist loadfile,)

# Lint: ruff's formatter and linter, and import-linter's layer contracts (pyproject.toml says which and why).
# `make format` rewrites the code the way `lint` expects it.
lint: install
	$(BIN)/ruff format --check --quiet .
	$(BIN)/ruff check --quiet .
	$(BIN)/lint-imports --no-cache

format: install
	$(BIN)/ruff format --quiet .
	$(BIN)/ruff check --fix --quiet .

test: install lint focus-validator services system-packages
	DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_TEST_URL) $(BIN)/python -m pytest $(call parallel,$(TEST_WORKERS)) $(PYTEST_ARGS)

# The inner loop: everything but the browser, real-worker and slow fault tests (no Chromium, no Celery processes).
test-fast: install lint services
	DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_TEST_URL) $(BIN)/python -m pytest $(call parallel,$(FAST_WORKERS)) \
		-m "not browser and not worker and not slow" $(PYTEST_ARGS)

# The role guides' screenshots (docs/guides/img/), retaken from the demo's real pages: look at them, then commit.
guide-images: install services system-packages
	GUIDE_IMAGES=1 DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_TEST_URL) $(BIN)/python -m pytest -p no:cacheprovider \
		tests/browser/test_guide_screenshots.py

# Ingest throughput on Postgres, one row per file shape and size, each imported end to end beside a plain COPY of
# the lines it wrote (requests or rows/s, lines written, stored bytes per line, peak RSS, the time ratio to COPY):
# FOCUS (bench-results/ingest.json): --lines N, the hourly Bedrock export of few series (1M and 5M, for the 5M / 1M
# peak-memory ratio); --resource-rows N, a per-resource export (daily rows of 5,000+ application inference profiles
# in 6 regions, ~830 SKUs, tags on every row). Gateway logs (bench-results/ingest-gateway.json), LiteLLM spend logs:
# --requests N, one busy day (3,840 hourly lines); --scattered-requests N, 300 keys x 50 users x 7 teams over 23 days,
# not tied together (nearly a line per request); --proxy-requests N, each key one user, team and model (~6 a line).
# Files are generated in the temp directory and deleted after each row. BENCH_LINES selects rows and sizes, e.g. a
# small run: make bench-ingest BENCH_LINES="--resource-rows 30000 --scattered-requests 50000 --proxy-requests 50000"
# Runs in its own database (it empties the usage-line tables there), never in $(PG_URL)'s.
BENCH_DB ?= finops_bench
BENCH_URL ?= postgres://postgres@127.0.0.1:5432/$(BENCH_DB)
BENCH_LINES ?= --lines 1000000 --lines 5000000 --resource-rows 300000 --requests 1000000 --requests 5000000 \
	--scattered-requests 1000000 --proxy-requests 1000000
BENCH_ENV := DATABASE_URL=$(BENCH_URL) DEBUG=0 SECRET_KEY=bench-only-not-a-secret DJANGO_READ_DOT_ENV_FILE=0 REDIS_URL=

bench: bench-ingest bench-pages bench-alerts bench-scorecard bench-whatif bench-report bench-load

bench-ingest: install
	@pg_isready -q -h 127.0.0.1 -p 5432 || $(MAKE) services
	@psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$(BENCH_DB)'" | grep -q 1 || \
		createdb -h 127.0.0.1 -U postgres $(BENCH_DB)
	$(BENCH_ENV) $(BIN)/python manage.py migrate --no-input -v 0
	$(BENCH_ENV) $(BIN)/python manage.py bench_ingest $(BENCH_LINES) --breakdown --out bench-results/ingest.json

# Spend pages at scale: a generated year of usage (10M lines: 50 teams, 400 workloads, 2,000 API keys, 34 models),
# p50/p95 server time of the overview, a team, a workload and an Explore page as an admin and a team lead, then a
# re-attribution moving 20 % of the lines, with the rollup checked against the raw lines; bench-results/pages.json.
# Its own database (it replaces the organisation there). Quick check: make bench-pages BENCH_PAGE_LINES=200000
BENCH_PAGES_DB ?= finops_bench10m
BENCH_PAGE_LINES ?= 10000000
# The page cache's Redis for the page benches (docs/performance.md): empty, each process keeps its own (locmem).
BENCH_PAGE_CACHE_URL ?=
BENCH_PAGES_ENV := DATABASE_URL=postgres://postgres@127.0.0.1:5432/$(BENCH_PAGES_DB) DEBUG=0 SECRET_KEY=bench-only-not-a-secret DJANGO_READ_DOT_ENV_FILE=0 REDIS_URL= PAGE_CACHE_URL=$(BENCH_PAGE_CACHE_URL)

# The page bench's database, created when missing and migrated (bench-pages and bench-alerts share it).
bench-pages-db: install
	@pg_isready -q -h 127.0.0.1 -p 5432 || $(MAKE) services
	@psql -h 127.0.0.1 -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$(BENCH_PAGES_DB)'" | grep -q 1 || \
		createdb -h 127.0.0.1 -U postgres $(BENCH_PAGES_DB)
	$(BENCH_PAGES_ENV) $(BIN)/python manage.py migrate --no-input -v 0

bench-pages: bench-pages-db
	$(BENCH_PAGES_ENV) $(BIN)/python manage.py bench_pages --lines $(BENCH_PAGE_LINES) --out bench-results/pages.json $(BENCH_PAGES_ARGS)

# Alert evaluation at scale: on the page bench's organisation (its database; the lines bench-pages left there are
# reused), a cap on every team and workload (450 at 10M lines), a full evaluation (target ≤ 2 s) and the evaluation
# after a one-day import (≤ 0.5 s); bench-results/alerts.json. Without bench-pages first, it generates the lines.
BENCH_ALERTS_ARGS ?= --reuse

bench-alerts: bench-pages-db
	$(BENCH_PAGES_ENV) $(BIN)/python manage.py bench_alerts --lines $(BENCH_PAGE_LINES) --out bench-results/alerts.json $(BENCH_ALERTS_ARGS)

# The quarterly scorecard at scale (issue 12): on the page bench's organisation (its lines reused; latency on every
# gateway line), the performance rollup rebuilt over the year (timed), then the scorecard of the last complete
# quarter as an admin and a team lead, p50/p95 (target ≤ 300 ms) beside a control query; bench-results/scorecard.json.
# Quick check: make bench-scorecard BENCH_PAGE_LINES=200000
bench-scorecard: bench-pages-db
	$(BENCH_PAGES_ENV) $(BIN)/python manage.py bench_scorecard --lines $(BENCH_PAGE_LINES) --out bench-results/scorecard.json $(BENCH_SCORECARD_ARGS)

# The what-if calculator at scale: on the page bench's organisation (the lines bench-pages left are reused), the
# busiest workload priced through GET /api/v1/whatif as an admin and a team lead (target p95 ≤ 200 ms);
# bench-results/whatif.json. Quick check: make bench-whatif BENCH_PAGE_LINES=200000 BENCH_PAGES_DB=<yours>_bench
bench-whatif: bench-pages-db
	$(BENCH_PAGES_ENV) $(BIN)/python manage.py bench_whatif --lines $(BENCH_PAGE_LINES) --out bench-results/whatif.json

# The monthly TCO report at scale (issue 14): on the page bench's organisation (its lines reused), the report of
# the last full month as an admin: the selector, the charts, the page (target p95 ≤ 1 s), the PDF (≤ 10 s), the CSV
# and the XLSX, p50/p95 beside a control query; bench-results/report.json.
# Quick check: make bench-report BENCH_PAGE_LINES=200000 BENCH_PAGES_DB=<yours>_bench
bench-report: bench-pages-db
	$(BENCH_PAGES_ENV) $(BIN)/python manage.py bench_report --lines $(BENCH_PAGE_LINES) --out bench-results/report.json $(BENCH_REPORT_ARGS)

# Throughput under concurrent sessions (issue 23): gunicorn with 4 workers (docker-compose.yml's command; the compose
# file runs 3) on 127.0.0.1 only, a mix of overview, teams, Explore, /api/v1/spend, caps and scorecard requested by
# 1, 8 and 32 signed-in sessions, each level bounded to 30 s and 2,000 requests; requests/s, p50 and p95 per level
# in bench-results/load.json. On the page bench's database: the organisation there is reused (bench-pages' 10M
# lines if it ran), else a small one is generated (BENCH_LOAD_LINES, 200,000 lines). A small run on a database of
# your own: make bench-load BENCH_PAGES_DB=<yours>_bench BENCH_LOAD_ARGS="--seconds 10"
BENCH_LOAD_LINES ?= 200000

bench-load: bench-pages-db
	$(BENCH_PAGES_ENV) $(BIN)/python manage.py bench_load --lines $(BENCH_LOAD_LINES) --out bench-results/load.json $(BENCH_LOAD_ARGS)

check: install
	$(BIN)/python manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) $(FOCUS_VENV) db.sqlite3 staticfiles .pytest_cache
