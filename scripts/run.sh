#!/usr/bin/env bash
# Serve Rank & Rate locally: SQLite under var/, the in-memory channel layer (live events reach the pages
# through the database: core.events, LIVE_EVENTS_FEED) and a Celery worker on
# a file-system broker, so nothing else has to be installed. Ctrl-C stops both processes.
set -euo pipefail
cd "$(dirname "$0")/.."
# Development settings (config.settings.local) unless DJANGO_SETTINGS_MODULE says otherwise.
export DJANGO_SETTINGS_MODULE=${DJANGO_SETTINGS_MODULE:-config.settings.local}
HOST=${HOST:-127.0.0.1}
PORT=${PORT:-8000}
mkdir -p var/celery/queue var/celery/processed var/celery/results
PY=.venv/bin/python
$PY manage.py migrate --noinput -v0
$PY manage.py load_demo
.venv/bin/celery -A config worker -Q default,gpu --pool=solo --concurrency=1 --loglevel=INFO \
  > var/worker.log 2>&1 &
WORKER=$!
trap 'kill $WORKER 2>/dev/null || true' EXIT INT TERM
echo
echo "Rank & Rate is running at http://$HOST:$PORT/  (admin: http://$HOST:$PORT/admin/, API docs: http://$HOST:$PORT/api/docs/)"
echo "Demo logins, password 'rank-and-rate': annotator1, annotator2 (annotators), researcher, admin"
echo "Celery worker log: var/worker.log"
echo
.venv/bin/daphne -b "$HOST" -p "$PORT" config.asgi:application
