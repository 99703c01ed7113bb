"""The APPLS testbed at sentence level: perturb oracle texts at graded magnitudes, score, fit slopes.

For each sampled source of a corpus (a source sentence with several human simplifications), one
simplification chosen by the seed is the *oracle* text and the others are the references the metrics
compare with.  Every perturbation is applied to the oracle at every magnitude (``simplify`` is applied to
the source instead, moving it towards the oracle: ASSET's human simplifications stand in for the paper's
GPT simplifications), every metric scores every perturbed text, and the slopes of score on magnitude
are fitted per metric and perturbation (:mod:`evaluation.stats.slopes`).  The LENS paper's Figure 2
systems (Copy, Drop 10%, Scramble 5%, Split, Human) are scored on the same sources.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.stats.slopes import Observation, SlopeRow, slope_table
from metrics.perturb.base import REGISTRY, Context
from metrics.perturb.figure import LENS_SYSTEMS, lens_systems
from metrics.perturb.nlp import parse
from metrics.perturb.ood import OUT_OF_DOMAIN
from metrics.perturb.perturbations import SWAPPABLE_ENTITIES
from metrics.perturb.sanity import SANITY_TOLERANCE, sanity_candidates, sanity_evaluate
from metrics.suite.base import Item, Metric

DEFAULT_MAGNITUDES: tuple[float, ...] = tuple(float(m) for m in range(0, 101, 10))
SIMPLIFICATION_NOTE = (
    "simplify replaces clauses of the complex sentence by the aligned part of a human simplification "
    "(ASSET's), standing in for the APPLS paper's GPT (text-davinci-003) simplification"
)

def skipped_rows(skipped: dict[str, int]) -> list[dict[str, Any]]:
    """The perturbations that left sources out (no eligible span in their oracle text), in the registry's
    order, each with its criterion and description, for a table."""
    return [{"perturbation": name, "label": name.replace("_", " "), "criterion": REGISTRY[name].criterion,
             "description": REGISTRY[name].description, "sources": skipped[name]}
            for name in REGISTRY if skipped.get(name)]


def skipped_sentence(skipped: dict[str, int]) -> str:
    """The same as a sentence (a run's note, the command's output); empty when nothing was left out."""
    rows = skipped_rows(skipped)
    if not rows:
        return ""
    parts = [f"{row['label']} {row['sources']} source{'s' if row['sources'] != 1 else ''}" for row in rows]
    return ("Left out for want of an eligible span (the oracle text had nothing that perturbation can change): "
            + ", ".join(parts) + ".")


Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``."""


@dataclass(frozen=True)
class CorpusRow:
    index: int
    source: str
    references: tuple[str, ...]


@dataclass
class TestbedResult:
    slopes: list[SlopeRow]
    means: dict[str, dict[str, dict[float, float]]]  # metric -> perturbation -> magnitude -> mean score
    lens_figure: dict[str, dict[str, dict[str, float]]]  # metric -> system -> {"mean", "std", "n"}
    skipped: dict[str, int]  # perturbation -> oracle texts with no eligible span
    rows: list[int]
    signatures: dict[str, str]
    perturbations_applied: int
    seconds: dict[str, float] = field(default_factory=dict)
    sanity: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    """Metric -> check -> its counts (:func:`metrics.perturb.sanity.sanity_evaluate`)."""

    def summary(self, config: dict[str, Any]) -> dict[str, Any]:
        return {
            "config": config,
            "note": SIMPLIFICATION_NOTE,
            "rows": self.rows,
            "signatures": self.signatures,
            "skipped_no_eligible_span": self.skipped,
            "perturbations_applied": self.perturbations_applied,
            "seconds": self.seconds,
            "means": {
                m: {p: {str(k): v for k, v in by.items()} for p, by in per.items()} for m, per in self.means.items()
            },
            "lens_figure": self.lens_figure,
            "sanity": self.sanity,
            "sanity_tolerance": SANITY_TOLERANCE,
        }


def sample_rows(rows: Sequence[CorpusRow], *, sample: int | None, seed: int) -> list[CorpusRow]:
    """``sample`` rows with at least two references, chosen by ``seed`` (all of them when ``None``), in order."""
    usable = [row for row in rows if len(row.references) >= 2]
    if sample is None or sample >= len(usable):
        return list(usable)
    return sorted(random.Random(seed).sample(usable, sample), key=lambda row: row.index)


def entity_pool(texts: Sequence[str]) -> dict[str, list[str]]:
    pool: dict[str, set[str]] = defaultdict(set)
    for text in texts:
        for ent in parse(text).ents:
            if ent.label_ in SWAPPABLE_ENTITIES:
                pool[ent.label_].add(ent.text)
    return {label: sorted(values) for label, values in pool.items()}


def run_testbed(
    rows: Sequence[CorpusRow],
    metrics: Sequence[Metric],
    *,
    magnitudes: Sequence[float] = DEFAULT_MAGNITUDES,
    perturbations: Sequence[str] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
) -> TestbedResult:
    """Perturb, score and fit (see the module docstring). ``rows`` are already sampled."""
    names = list(perturbations or REGISTRY)
    report = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    rng = random.Random(seed)
    oracles = [rng.randrange(len(row.references)) for row in rows]
    entities = entity_pool([text for row in rows for text in (row.source, *row.references)])
    # Items to score: key -> Item; observations refer to keys.
    items: dict[tuple[str, str], Item] = {}
    planned: list[tuple[str, str, float, tuple[str, str]]] = []  # perturbation, criterion, magnitude, key
    skipped: dict[str, int] = dict.fromkeys(names, 0)
    applied = 0
    figure: list[tuple[str, tuple[str, str]]] = []
    sanity_plan: list[tuple[dict[str, tuple[str, str]], dict[str, tuple[str, str]]]] = []  # candidates, comparison
    for r, (row, k) in enumerate(zip(rows, oracles, strict=True)):
        oracle = row.references[k]
        others = tuple(ref for j, ref in enumerate(row.references) if j != k)
        neighbours = [rows[(r + step) % len(rows)] for step in range(1, min(6, len(rows)))]
        context = Context(
            source=row.source,
            references=others,
            simplification=oracle,
            in_domain=[n.references[0] for n in neighbours if n.references],
            out_of_domain=OUT_OF_DOMAIN,
            entities=entities,
        )
        for name in names:
            perturbation = REGISTRY[name]
            base = row.source if name == "simplify" else oracle
            results = [perturbation(base, magnitude=m, seed=seed + row.index, context=context) for m in magnitudes]
            if results[0].no_eligible_span:
                skipped[name] += 1
                continue
            for m, result in zip(magnitudes, results, strict=True):
                applied += 1
                key = (row.source, result.text)
                items.setdefault(key, Item(row.source, result.text, others))
                planned.append((name, perturbation.criterion, m, key))
        comparison: dict[str, tuple[str, str]] = {}
        for system, text in lens_systems(row.source, oracle, seed=seed + row.index).items():
            key = (row.source, text)
            items.setdefault(key, Item(row.source, text, others))
            figure.append((system, key))
            comparison[text] = key
        unrelated = rows[(r + 1) % len(rows)].references if len(rows) > 1 else ()
        candidates: dict[str, tuple[str, str]] = {}
        for check, text in sanity_candidates(row.source, others, unrelated[0] if unrelated else None).items():
            key = (row.source, text)
            items.setdefault(key, Item(row.source, text, others))
            candidates[check] = key
        sanity_plan.append((candidates, comparison))
        report("perturb", r + 1, len(rows))
    perturbed_at = time.perf_counter()
    keys = list(items)
    batch = [items[key] for key in keys]
    observations: list[Observation] = []
    means: dict[str, dict[str, dict[float, float]]] = {}
    lens_figure: dict[str, dict[str, dict[str, float]]] = {}
    sanity: dict[str, dict[str, dict[str, Any]]] = {}
    seconds: dict[str, float] = {"perturb": perturbed_at - started}
    for i, metric in enumerate(metrics):
        t0 = time.perf_counter()
        scores = dict(zip(keys, (s.value for s in metric.score_batch(batch, allow_empty=True)), strict=True))
        seconds[f"score:{metric.name}"] = time.perf_counter() - t0
        grouped: dict[str, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
        for name, criterion, m, key in planned:
            observations.append(
                Observation(metric.name, name, criterion, REGISTRY[name].expected, m, scores[key],
                            metric.higher_is_better)
            )
            grouped[name][m].append(scores[key])
        means[metric.name] = {
            name: {m: statistics.fmean(values) for m, values in sorted(by.items())} for name, by in grouped.items()
        }
        per_system: dict[str, list[float]] = defaultdict(list)
        for system, key in figure:
            per_system[system].append(scores[key])
        lens_figure[metric.name] = {
            system: {
                "mean": statistics.fmean(per_system[system]),
                "std": statistics.stdev(per_system[system]) if len(per_system[system]) > 1 else 0.0,
                "n": float(len(per_system[system])),
            }
            for system in LENS_SYSTEMS
            if per_system[system]
        }
        sanity[metric.name] = sanity_evaluate(
            [{"candidates": {check: scores[key] for check, key in candidates.items()},
              "texts": {check: key[1] for check, key in candidates.items()},
              "others": {text: scores[key] for text, key in comparison.items()}}
             for candidates, comparison in sanity_plan],
            higher_is_better=metric.higher_is_better,
        )
        for cell in sanity[metric.name].values():  # positions in the sample -> the corpus's row numbers
            cell["failed_sources"] = [rows[p].index for p in cell["failed_sources"]]
        report("score", i + 1, len(metrics))
    seconds["total"] = time.perf_counter() - started
    return TestbedResult(
        slopes=slope_table(observations),
        means=means,
        lens_figure=lens_figure,
        skipped=skipped,
        rows=[row.index for row in rows],
        signatures={metric.name: metric.signature for metric in metrics},
        perturbations_applied=applied,
        seconds=seconds,
        sanity=sanity,
    )
