#!/usr/bin/env bash
# The whole suite: ruff, mypy over the whole project, a strict build of docs/ (MkDocs) with the README's
# links checked, then pytest with coverage and the coverage table per package (failing when a core or
# service package falls below its floor, scripts/coverage_floors.py).
# Uses PostgreSQL and Redis on 127.0.0.1 when they answer (as on the project's machines and in CI), SQLite
# otherwise; the pytest header says which database it used. NO_COVERAGE=1 runs pytest without coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
if [ -z "${DATABASE_URL:-}" ]; then
  if $PY -c "import psycopg2; psycopg2.connect(host='127.0.0.1', user='postgres', dbname='postgres', connect_timeout=3).close()" 2>/dev/null; then
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/rankrate
  else
    echo "warning: PostgreSQL does not answer on 127.0.0.1:5432; running the suite on SQLite" >&2
  fi
fi
if [ -z "${REDIS_URL:-}" ]; then
  if $PY -c "import redis; redis.Redis(host='127.0.0.1', socket_connect_timeout=2).ping()" 2>/dev/null; then
    export REDIS_URL=redis://127.0.0.1:6379/15
  fi
fi
echo "== ruff"; .venv/bin/ruff check .
echo "== mypy (whole project)"; $PY -m mypy  # run as a module: this checkout comes first on sys.path
echo "== docs (mkdocs build --strict: every link between pages resolves; nothing is written to the checkout)"
site=$(mktemp -d)
.venv/bin/mkdocs build --strict --quiet --site-dir "$site"
rm -rf "$site"
$PY scripts/check_readme_links.py
echo "== pytest"
if [ -n "${NO_COVERAGE:-}" ]; then
  exec $PY -m pytest "$@"
fi
rm -f .coverage
$PY -m pytest --cov --cov-report= "$@"
echo "== coverage per package (floors: scripts/coverage_floors.py)"
exec $PY scripts/coverage_floors.py
