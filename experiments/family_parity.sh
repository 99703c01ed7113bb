#!/usr/bin/env bash
# One small seeded training of each learned kind (LENS, REFEREE, SIERA) through the product's commands,
# then their meta-evaluation on SimpEval_2022, in a fresh SQLite database. Run it on two checkouts to
# compare the figures (they should agree to the third decimal):
#
#     bash experiments/family_parity.sh [CHECKOUT] > parity.txt
#
# CHECKOUT (default: this one) must have its own .venv. Needs the released data (SIMPEVAL_DATA_DIR,
# default ../shared/data). Takes a few minutes on 2 CPU cores.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
checkout=$(cd "${1:-$here}" && pwd)
data=$(cd "${SIMPEVAL_DATA_DIR:-$here/../shared/data}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DATABASE_URL="sqlite:///$work/db.sqlite3" REDIS_URL="" CELERY_TASK_ALWAYS_EAGER=1
export RANKRATE_VAR_DIR="$work/var" LENS_CHECKPOINT_DIR="$work/checkpoints" LEARNED_CHECKPOINT_DIR="$work/checkpoints"
cd "$checkout"
m() { .venv/bin/python manage.py "$@"; }
m migrate -v0
m import_simpeval "$data/simpeval/simpeval_2022.csv" --campaign simpeval-2022 \
  --references "$data/simpeval/simpeval_2022_references.src" "$data/simpeval/simpeval_2022_references.dst" >/dev/null
m import_simpeval "$data/simpeval/simpeval_past.csv" --campaign simpeval-past \
  --references "$data/asset/asset.test.orig" "$data/asset/asset.test.simp."{0..9} >/dev/null
m import_corpus --name asset-valid "$data/asset/asset.valid.orig" "$data/asset/asset.valid.simp."{0..9} >/dev/null
m train_metric --kind lens --campaign simpeval-past --seed 0 --threads 2 -v0 \
  --option epochs=2 --option freeze_epochs=2 | tail -1
m train_metric --kind referee --campaign simpeval-past --seed 0 --threads 2 -v0 \
  --option max_sources=40 --option trainable_layers=1 --option synthetic_epochs=1 --option finetune_epochs=1 | tail -1
m train_metric --kind siera --seed 0 --threads 2 -v0 --option max_pairs=300 --option epochs=1 | tail -1
m meta_evaluate --campaign simpeval-2022 --metric lens:latest,referee:latest,siera:latest --json
