#!/usr/bin/env bash
# Run the cheap `manage.py` commands of the README, then of the documentation (docs/*.md and
# experiments/README.md), exactly as written, in a fresh clone of this checkout's HEAD, with no environment
# variables beyond PATH and HOME, and check each exits 0. A command written on several pages runs once.
#
#   bash scripts/readme_commands.sh          # migrate, import_simpeval (both, with references),
#                                            # export_simpeval (CSV round trip + JSONL), import_jsonl,
#                                            # import_da (both), import_corpus, campaign_report
#   bash scripts/readme_commands.sh --all    # also `analyze` (loads spaCy and MiniLM: minutes)
#
# Never run: training (train_lens, train_metric), the commands that need a trained version or build models
# (meta_evaluate, lens_score, perturbation_testbed, build_pomme), install_encoder (a download) and
# commands with placeholders. The clone sits in a temporary folder beside a link to ../shared, so the
# pages' ../shared/data paths resolve as they do from a checkout; it shares this .venv.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
CHEAP="migrate import_simpeval export_simpeval import_jsonl import_da import_corpus campaign_report"
[ "${1:-}" = "--all" ] && CHEAP="$CHEAP analyze"
WORK=$(mktemp -d /tmp/readme-commands-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
git clone -q "$REPO" "$WORK/rank-and-rate"
ln -s "$(cd "$REPO/.." && pwd)/shared" "$WORK/shared"
ln -s "$REPO/.venv" "$WORK/rank-and-rate/.venv"
cd "$WORK/rank-and-rate"

# The pages' manage.py command lines, each once (scripts/doc_commands.py: what counts as one).
mapfile -t COMMANDS < <("$REPO/.venv/bin/python" "$REPO/scripts/doc_commands.py" README.md docs/*.md experiments/README.md)

failed=0
ran=0
for command in "${COMMANDS[@]}"; do
  sub=$(sed -E 's/.*manage\.py ([a-z_]+).*/\1/' <<<"$command")
  case " $CHEAP " in *" $sub "*) ;; *) echo "skip  $command"; continue ;; esac
  case "$command" in *'$'*|*'...'*) echo "skip  $command  (needs your values)"; continue ;; esac
  ran=$((ran + 1))
  if output=$(env -i PATH=/usr/bin:/bin HOME="$HOME" bash -c "$command" 2>&1); then
    echo "ok    $command"
  else
    echo "FAIL  $command"
    failed=$((failed + 1))
  fi
  echo "      -> $(tail -n 1 <<<"$output")"
done
if [ -f simpeval_2022.csv ]; then
  if cmp -s simpeval_2022.csv ../shared/data/simpeval/simpeval_2022.csv; then
    echo "ok    export_simpeval wrote simpeval_2022.csv with the released file's bytes"
  else
    echo "FAIL  simpeval_2022.csv differs from ../shared/data/simpeval/simpeval_2022.csv"; failed=$((failed + 1))
  fi
fi
echo "$ran commands of the README and the docs run, $failed failed"
[ "$ran" -gt 0 ] && [ "$failed" -eq 0 ]
