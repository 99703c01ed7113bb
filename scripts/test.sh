#!/usr/bin/env bash
# The whole suite: ruff, mypy over the whole project, then pytest. Uses PostgreSQL and Redis on
# 127.0.0.1 when they answer (as on the project's machines and in CI), SQLite otherwise; the
# pytest header says which database it used.
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
echo "== mypy (whole project)"; .venv/bin/mypy
echo "== pytest"
exec $PY -m pytest "$@"
