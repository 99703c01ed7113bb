"""subset2evaluate (Zouhar et al., TACL 2025) beside our allocation policies, as a reference.

It runs in its own virtual environment, outside the product's dependencies (it imports nothing from this
project, only numpy and subset2evaluate):

    python3.11 -m venv /work/s2e-venv && /work/s2e-venv/bin/pip install --no-deps subset2evaluate
    /work/s2e-venv/bin/pip install numpy scipy
    /work/s2e-venv/bin/python experiments/subset2evaluate_reference.py \\
        --csv ../shared/data/simpeval/simpeval_past.csv --scores /work/alloc-cache/SimpEval_past-*.npy

``--scores`` is the metric cache that ``allocation_experiment.py`` writes (``(metric, source, system)``:
SARI, BLEU, -FKGL, sources in file order, systems sorted). subset2evaluate orders whole items (a source with
every output rated by every slot: 120 ratings on SimpEval_past); the first ``k`` items are revealed in
full, and the same measures as ``allocation_experiment.py`` are taken: Kendall's tau-b of the system means
with the full data's, and whether the top system is right.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
import subset2evaluate  # type: ignore[import-not-found]

METRICS = ("sari", "bleu", "fkgl")


def _tau(x: np.ndarray, y: np.ndarray) -> float:
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu_indices(len(x), k=1)
    a, b = dx[upper], dy[upper]
    return float(np.sum(a * b) / np.sqrt(np.count_nonzero(a) * np.count_nonzero(b)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv", type=Path, required=True)
    parser.add_argument("--scores", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=50, help="seeds of the random baseline")
    args = parser.parse_args()
    with args.csv.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    sources = list(dict.fromkeys(row["original_id"] for row in rows))
    systems = sorted({row["system"] for row in rows})
    slots = sorted({c for c in rows[0] if c.startswith("rating_") and "z" in c})
    human = np.full((len(sources), len(systems)), np.nan)
    ratings = np.zeros(len(sources), dtype=int)
    for row in rows:
        s, k = sources.index(row["original_id"]), systems.index(row["system"])
        human[s, k] = np.mean([float(row[c]) for c in slots])
        ratings[s] += len(slots)
    scores = np.load(args.scores)
    full = human.mean(axis=0)
    total = int(ratings.sum())
    data = [
        {"i": s, "scores": {system: {"human": float(human[s, k]),
                                     **{m: float(np.nan_to_num(scores[j, s, k])) for j, m in enumerate(METRICS)}}
                            for k, system in enumerate(systems)}}
        for s in range(len(sources))
    ]

    def measure(order: list[int]) -> dict[str, object]:
        cost, taus, tops = [], [], []
        for n in range(1, len(order) + 1):
            means = human[order[:n]].mean(axis=0)
            cost.append(int(ratings[order[:n]].sum()))
            taus.append(_tau(means, full))
            tops.append(int(np.argmax(means)) == int(np.argmax(full)))
        below = [i for i, t in enumerate(taus) if t < 0.95]
        start = below[-1] + 1 if below else 0
        top1 = {}
        for share in (0.1, 0.2, 0.3, 0.5):
            within = [i for i, c in enumerate(cost) if c <= share * total]
            top1[str(share)] = bool(tops[within[-1]]) if within else False
        return {"ratings_to_tau95": cost[start] if start < len(cost) else None, "top1": top1}

    results: dict[str, object] = {}
    for method, metric in (("metric_var", "sari"), ("metric_var", "bleu"), ("metric_var", "fkgl"),
                           ("metric_avg", "sari"), ("metric_cons", "sari"), ("metric_cons", "bleu")):
        ordered = subset2evaluate.select_subset.basic(data, method=method, metric=metric)
        results[f"{method}:{metric}"] = measure([item["i"] for item in ordered])
    random_runs = [measure(list(np.random.default_rng(seed).permutation(len(sources)))) for seed in range(args.seeds)]
    needs = [r["ratings_to_tau95"] for r in random_runs]
    results["random (items in full)"] = {
        "ratings_to_tau95_median": float(np.median([n if n is not None else total + 1 for n in needs])),
        "top1": {share: float(np.mean([r["top1"][share] for r in random_runs]))  # type: ignore[index]
                 for share in ("0.1", "0.2", "0.3", "0.5")},
    }
    print(json.dumps({"full_ratings": total, "methods": results}, indent=1))


if __name__ == "__main__":
    main()
