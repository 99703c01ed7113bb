#!/usr/bin/env bash
# The prepared GPU session of issue 47 (experiments/gpu_session.py; experiments/README.md, "Prepared device
# session"). On the device machine, once the bundle's parts were carried: tests/gpu beside the research
# configuration of LENS, REFEREE and SIERA x seeds 0 1 2, the results under $OUT and a table on stdout.
#
# MPNet, the research encoder, is NOT on the device image and cannot be fetched there: it arrives only in the
# bundle that `gpu_session pack` builds where `python manage.py install_encoder mpnet` was run. Without it the
# session times the CPU-default kinds on the GPU instead (not the research configuration, and not clean), and
# without MiniLM too it runs tests/gpu alone. Here, `PYTHON=.venv/bin/python experiments/gpu_session.sh --smoke`
# runs the same path on the CPU in under a minute.
if [ "$1" = --smoke ]; then shift; exec "${PYTHON:-python3}" -m experiments.gpu_session smoke "$@"; fi
exec "${PYTHON:-python3}" -m experiments.gpu_session run "$@"
