# Everyday commands. `make run` serves the app with its worker; `make test` runs the whole suite.
PY := .venv/bin/python

.PHONY: setup run test lint typecheck docs bench demo clean

setup:  ## create .venv and install the project (idempotent)
	@bash scripts/setup.sh

run: setup  ## migrate, load the demo and serve the app with a Celery worker (SQLite, no servers needed)
	@bash scripts/run.sh

test: setup  ## lint, type-check and run the whole test suite (PostgreSQL + Redis when they answer)
	@bash scripts/test.sh

lint: setup
	@.venv/bin/ruff check .

typecheck: setup
	@.venv/bin/python -m mypy

docs: setup  ## build the documentation strictly (a broken link between pages fails) into site/
	@.venv/bin/mkdocs build --strict

bench: setup  ## print the benchmark figures
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf var/ artifacts/
