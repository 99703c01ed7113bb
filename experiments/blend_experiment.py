"""The blended metric on the released data: choose its learner and features by grouped cross-validation over
SimpEval_past's sources, then evaluate the chosen blend once on the test sets.

    # 1. every component's scores of every set, cached outside the repository (minutes: BERTScore on the CPU)
    .venv/bin/python -m experiments.blend_experiment cache --cache /work/blend-cache
    # 2. selection: grouped cross-validation over SimpEval_past's sources (never opens a test-set file)
    .venv/bin/python -m experiments.blend_experiment select --cache /work/blend-cache
    # 3. the chosen configuration, 3 seeds, on SimpEval_2022, Simplicity-DA (434) and SimpDA_2022, once;
    #    with --ablation also each component alone and the blend without each group (reported, not chosen)
    .venv/bin/python -m experiments.blend_experiment evaluate --cache /work/blend-cache --ablation
    # the second configuration: the same steps with --cv sources-systems (selection held out systems too)
    .venv/bin/python -m experiments.blend_experiment select --cache /work/blend-cache --cv sources-systems
    .venv/bin/python -m experiments.blend_experiment evaluate --cache /work/blend-cache --cv sources-systems
    # the third configuration: out-of-fold LENS scores (experiments.blend_lens), then selection by each of
    # CRITERIA over THIRD_FEATURE_SETS, and each criterion's choice evaluated once
    .venv/bin/python -m experiments.blend_experiment lens --cache /work/blend-cache --threads 2
    .venv/bin/python -m experiments.blend_experiment select --cache /work/blend-cache --third --cv like-2022
    .venv/bin/python -m experiments.blend_experiment evaluate --cache /work/blend-cache --third --cv like-2022 \\
        --ablation

Training data is SimpEval_past, in SimpEval_2022's reference design (one reference per source: the ASSET
reference that SimpEval_past rates as a system, the twin of "Human 1 Writing"); the blend is fitted as the
product fits it (``metrics.blend.kind.fit_blend``: grouped CV chooses the learner, then a fit on every
training source; 10% of the sources held out per seed, as ``train_metric`` does). The components are the
suite metrics and the text features; the third configuration adds LENS (``experiments.blend_lens``).
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import csv
import hashlib
import io
import json
import os
import pathlib
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from metrics.lens.types import Sample

TEST_FILES = ("simpeval_2022", "simpda_2022", "simplikert_2022", "simplicity_da", "test-")
"""Parts of the names of every file selection must not open: the test sets and their cached scores."""
SUITE = ("sari", "sari:lens", "bleu", "gleu", "fkgl", "bertscore", "self-bertscore")
TEXT = ("length", "compression", "sentences", "overlap")
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "all": SUITE + TEXT,
    "suite": SUITE,
    "no-bertscore": tuple(n for n in SUITE + TEXT if "bertscore" not in n),
    "sari+bertscore+text": ("sari", "bertscore", "self-bertscore", *TEXT),
}
"""The feature sets selection chooses among (with the learner)."""
SEEDS = (0, 1, 2)
CV_FOLDS = 5
"""Source folds of selection (both criteria)."""
SYSTEM_FOLDS = 3
"""System folds of the second criterion (``--cv sources-systems``): SimpEval_past's 24 systems in 3 groups of
8, so each cell scores 8 unseen systems' outputs of 20 unseen sources."""
SECOND_GRID_LEARNERS = ("ridge", "pairwise", "kernel")
"""The second configuration's grid, declared before it ran: the four ``FEATURE_SETS`` x every setting of
these learners in ``metrics.blend.learners.candidates`` (ridge alpha 0.1-100, pairwise alpha 0.1-10^4, kernel
alpha 0.3/3 x gamma 0.02/0.1), chosen by the ``sources-systems`` criterion."""
LENS = "lens"
"""The learned component of the third configuration: LENS with ``train_lens``'s CPU defaults (MiniLM frozen,
rank_weight 10), out-of-fold on training outputs (``experiments.blend_lens``)."""
THIRD_FEATURE_SETS: dict[str, tuple[str, ...]] = {
    **FEATURE_SETS, **{f"{name}+lens": (*names, LENS) for name, names in FEATURE_SETS.items()}, "lens": (LENS,)}
"""The third configuration's feature sets, declared before its selection ran: the four above, each of them
with the LENS component, and LENS alone; x every setting of ``SECOND_GRID_LEARNERS``."""
CRITERIA = ("sources", "like-2022")
"""The third configuration's two selection criteria, both on SimpEval_past only: ``sources`` (the 5-fold
grouped CV of the first configuration) and ``like-2022`` (the same folds and fits, each held-out fold scored
by the tau_all of its outputs of ``experiments.datasets.PAST_LIKE_2022_SYSTEMS`` only, the view of SimpEval_past
built like SimpEval_2022: a human reference, a second human and the four strongest systems)."""


class TestSetRead(RuntimeError):
    """Selection opened a test-set file."""


@contextlib.contextmanager
def no_test_sets() -> Iterator[None]:
    """Within the block, opening a file whose name is a test set's (``TEST_FILES``) raises
    :class:`TestSetRead` (``open``, ``io.open`` and ``Path.open``/``read_text`` all go through these)."""
    real_open, real_path_open = builtins.open, pathlib.Path.open

    def check(file: Any) -> None:
        name = os.path.basename(os.fspath(file)).lower() if isinstance(file, str | bytes | os.PathLike) else ""
        if any(part in name for part in TEST_FILES):
            raise TestSetRead(f"selection opened a test-set file: {file}")

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        check(file)
        return real_open(file, *args, **kwargs)

    def guarded_path_open(self: pathlib.Path, *args: Any, **kwargs: Any) -> Any:
        check(self)
        return real_path_open(self, *args, **kwargs)

    builtins.open = guarded_open
    io.open = guarded_open
    pathlib.Path.open = guarded_path_open  # type: ignore[method-assign]
    try:
        yield
    finally:
        builtins.open, io.open = real_open, real_open
        pathlib.Path.open = real_path_open  # type: ignore[method-assign]


# --- data ---------------------------------------------------------------------------------------------------


def data_root() -> Path:
    return Path(os.environ.get("SIMPEVAL_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))


def training_samples(root: Path) -> list[Sample]:
    """SimpEval_past in SimpEval_2022's reference design (see the module docstring)."""
    from experiments.datasets import load_simpeval_past, simpeval_past_systems

    samples = load_simpeval_past(root)
    systems = simpeval_past_systems(root)
    reference = {s.source_id: s.output for s in samples if systems.get(s.output_id) == "asset.test.simp"}
    return [replace(s, references=(reference[s.source_id],)) for s in samples if s.source_id in reference]


@dataclass(frozen=True)
class Rated:
    """A test output with its ratings per aspect (mean raw rating per aspect)."""

    complex: str
    output: str
    references: tuple[str, ...]
    aspects: dict[str, float]


def wiki_da(root: Path) -> list[Rated]:
    """Simplicity-DA's outputs whose source SimpEval_past does not have (434,
    ``experiments.selection.simplicity_da_heldout``), with their mean z per aspect."""
    from experiments.selection import simplicity_da_heldout

    return [Rated(r.complex, r.output, r.references, dict(r.z)) for r in simplicity_da_heldout(root)]


def simpda_2022(root: Path) -> list[Rated]:
    """SimpDA_2022: the 360 outputs of SimpEval_2022 with the mean crowd rating per aspect, scored against
    SimpEval_2022's reference; the complex sentence is SimpEval_2022's of the same id (a few of SimpDA_2022's
    originals differ from it by a word)."""
    from experiments.datasets import load_simpeval_2022

    s22 = {s.source_id.removeprefix("s22:"): s for s, _ in load_simpeval_2022(root)}
    ratings: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    references: dict[str, tuple[str, ...]] = {}
    with open(root / "simpeval" / "simpDA_2022.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            source = s22[row["Input.id"]]
            references[source.complex] = source.references
            for aspect in ("adequacy", "fluency", "simplicity"):
                ratings[(source.complex, row["Input.simplified"])][aspect].append(float(row[f"Answer.{aspect}"]))
    return [Rated(c, o, references[c], {a: statistics.fmean(v) for a, v in by.items()})
            for (c, o), by in ratings.items()]


# --- cached component scores -------------------------------------------------------------------------------


def _key(complex_text: str, output: str, references: Sequence[str]) -> str:
    return hashlib.sha256(json.dumps([complex_text, output, list(references)]).encode()).hexdigest()[:24]


def cache_file(cache: Path, dataset: str, component: str) -> Path:
    """Test sets' caches start with ``test-`` (selection's guard refuses them)."""
    prefix = "" if dataset == "past" else "test-"
    return cache / f"{prefix}{dataset}--{component.replace(':', '_')}.json"


def compute_cache(cache: Path, dataset: str, items: Sequence[Any]) -> None:
    from metrics.blend.features import component_scores, suite_component, text_component

    cache.mkdir(parents=True, exist_ok=True)
    for name in (*SUITE, *TEXT):
        component = suite_component(name) if name in SUITE else text_component(name)
        path = cache_file(cache, dataset, name)
        if path.is_file() and json.loads(path.read_text())["signature"] == component.signature:
            continue
        started = time.perf_counter()
        unique = {_key(i.complex, i.output, i.references): i for i in items}
        values = component_scores(component, list(unique.values()))
        path.write_text(json.dumps({"signature": component.signature,
                                    "scores": dict(zip(unique, values, strict=True))}))
        print(f"{dataset} {name}: {len(unique)} items in {time.perf_counter() - started:.0f}s", flush=True)


def cached_scores(cache: Path, dataset: str, lens: str | None = None) -> Callable[[Any, Sequence[Any]], list[float]]:
    """``scores(component, items)`` read from the cache of ``dataset`` (refusing a stale signature); the LENS
    component's from its ``lens`` context (``select``: selection's out-of-fold scores, ``seed<s>``: a seed's,
    see ``experiments.blend_lens``)."""
    loaded: dict[str, dict[str, Any]] = {}

    def scores(component: Any, items: Sequence[Any]) -> list[float]:
        name = component.name.partition(":")[2]
        if name == LENS:
            if lens is None:
                raise ValueError("the LENS component's scores need a context (select, seed<s>)")
            name = f"{LENS}_{lens}"
        if name not in loaded:
            loaded[name] = json.loads(cache_file(cache, dataset, name).read_text())
            if loaded[name]["signature"] != component.signature:
                raise RuntimeError(f"{dataset} {name}: stale cache; run `cache` again")
        table = loaded[name]["scores"]
        return [float(table[_key(i.complex, i.output, i.references)]) for i in items]

    return scores


def components_of(names: Sequence[str]) -> list[Any]:
    from experiments.blend_lens import LENS_SIGNATURE
    from metrics.blend.features import Component, suite_component, text_component

    return [Component(f"learned:{LENS}", LENS_SIGNATURE) if n == LENS
            else suite_component(n) if n in SUITE else text_component(n) for n in names]


def like_2022_criterion(samples: Sequence[Sample], systems: Sequence[str]) -> Any:
    """The ``like-2022`` criterion on rows of ``samples`` (each of ``systems``): the tau-like of the rows whose
    system is one of ``PAST_LIKE_2022_SYSTEMS`` (the others are fitted on, never scored)."""
    import numpy as np

    from experiments.datasets import PAST_LIKE_2022_SYSTEMS
    from metrics.blend.kind import tau_criterion

    inner = tau_criterion(samples)
    keep = np.asarray([system in PAST_LIKE_2022_SYSTEMS for system in systems])

    def criterion(rows: Any, predicted: Any) -> float | None:
        mask = keep[np.asarray(rows, dtype=np.int64)]
        return inner(np.asarray(rows)[mask], np.asarray(predicted)[mask]) if mask.any() else None

    return criterion


def criterion_of(name: str, samples: Sequence[Sample], systems: Sequence[str]) -> Any:
    """A selection criterion by name (``sources``/``sources-systems``: the tau-like of every held-out output;
    ``like-2022``: :func:`like_2022_criterion`)."""
    from metrics.blend.kind import tau_criterion

    return like_2022_criterion(samples, systems) if name == "like-2022" else tau_criterion(samples)


# --- selection (never opens a test-set file) ----------------------------------------------------------------


def past_systems(root: Path, samples: Sequence[Sample]) -> list[str]:
    """Each SimpEval_past sample's system."""
    from experiments.datasets import simpeval_past_systems

    systems = simpeval_past_systems(root)
    return [systems[s.output_id] for s in samples]


def select(root: Path, cache: Path, *, folds: int = CV_FOLDS, seed: int = 0, learner: str = "auto",
           cv: str = "sources", system_folds: int = SYSTEM_FOLDS,
           feature_sets: dict[str, tuple[str, ...]] | None = None) -> dict[str, Any]:
    """Grouped cross-validation over SimpEval_past's sources (``cv`` = ``sources-systems``: over its sources
    and systems together, see ``metrics.blend.learners.grouped_folds``; ``like-2022``: over its sources,
    scored on the held-out SimpEval_2022-like systems only, :func:`like_2022_criterion`) of every feature set
    (``feature_sets``, by default ``FEATURE_SETS``) x learner setting (``learner``: every learner's, or
    one's); the choice is the best mean criterion. The LENS component's scores are selection's out-of-fold
    ones. Runs under :func:`no_test_sets`."""
    import numpy as np

    from metrics.blend.features import feature_matrix
    from metrics.blend.learners import best, candidates, cross_validate

    with no_test_sets():
        train = training_samples(root)
        scores = cached_scores(cache, "past", lens="select")
        y = np.asarray([s.z for s in train])
        groups = [s.source_id for s in train]
        systems = past_systems(root, train)
        by_system = systems if cv == "sources-systems" else None
        splits: dict[str, Any] = {"systems": by_system, "system_folds": system_folds if by_system is not None else 0}
        criterion = criterion_of(cv, train, systems)
        sets = FEATURE_SETS if feature_sets is None else feature_sets
        table = []
        for set_name, names in sets.items():
            x = feature_matrix(components_of(names), train, scores)
            for result in cross_validate(candidates(learner), x, y, groups, folds=folds, seed=seed,
                                         criterion=criterion, **splits):
                table.append({"features": set_name, "candidate": result.candidate.label,
                              "learner": result.candidate.learner, "cv_tau": result.mean})
                print(f"{set_name:22s} {result.candidate.label:32s} cv tau_all {result.mean:.3f}", flush=True)
        ranked = max(table, key=lambda row: row["cv_tau"] or -1.0)
        singles = {}
        with_lens = any(LENS in names for names in sets.values())
        for name in (*SUITE, *TEXT, *((LENS,) if with_lens else ())):  # each alone, on the same folds
            x = feature_matrix(components_of([name]), train, scores)
            singles[name] = best(cross_validate(candidates("ridge")[:1], x, y, groups, folds=folds, seed=seed,
                                                criterion=criterion, **splits)).mean
    return {"chosen": {"features": ranked["features"], "learner": ranked["learner"], "cv_tau": ranked["cv_tau"],
                       "cv": cv, "candidate": ranked["candidate"]},
            "table": table, "singles_cv": singles}


# --- the one evaluation -------------------------------------------------------------------------------------


def evaluate(root: Path, cache: Path, chosen: dict[str, Any], *, ablation: bool,
             extra: Sequence[tuple[str, str]] = (), third: bool = False, record: Path | None = None) -> None:
    """The chosen configuration, 3 seeds, on the test sets (``ablation``: also without each feature group, and
    each component alone; ``extra``: (feature set, learner) rows reported beside it, not chosen; ``third``:
    the third configuration, whose feature sets may read LENS and whose criterion may be ``like-2022``;
    ``record``: also write every row's per-seed figures there, as JSON)."""
    from experiments.datasets import REFERENCE_SYSTEM, load_simpeval_2022, split_heldout
    from metrics.blend.features import feature_matrix
    from metrics.blend.kind import BlendConfig, fit_blend
    from metrics.blend.learners import grouped_folds, predict

    train_all = training_samples(root)
    cv = chosen.get("cv", "sources")
    sets = THIRD_FEATURE_SETS if third else FEATURE_SETS
    system_of = dict(zip((s.output_id for s in train_all), past_systems(root, train_all), strict=True))
    s22 = load_simpeval_2022(root)
    tests = {"wiki-da": wiki_da(root), "simpda-2022": simpda_2022(root)}
    configurations: list[tuple[str, tuple[str, ...], str]] = [
        (f"blend (chosen: {chosen['features']}, {chosen['learner']}, cv {cv})", sets[chosen["features"]],
         chosen["learner"])]
    configurations += [(f"  not chosen: {f}, {learner}", sets[f], learner) for f, learner in extra]
    if ablation:
        names = sets[chosen["features"]]
        groups = {"suite": SUITE, "text": TEXT, "bertscore": ("bertscore", "self-bertscore"), "sari": ("sari",),
                  "lens": (LENS,)}
        configurations += [(f"  without {g}", tuple(n for n in names if n not in members), chosen["learner"])
                           for g, members in groups.items()
                           if any(n in names for n in members) and any(n not in members for n in names)]
        if third and names != (LENS,):
            configurations.append(("  LENS alone (fitted)", (LENS,), chosen["learner"]))
    print(f"{'configuration':46s} {'seed':>4s} {'s':>5s} {'cv':>6s} | {'para':>6s} {'spl':>6s} {'all':>6s} "
          f"{'CI all':>15s} {'w/o H1':>6s} | WIKI-DA r flu/mea/sim | SimpDA r ade/flu/sim | sys acc, r (S22)")
    recorded: list[dict[str, Any]] = []

    def lens_seconds(seed: int) -> float:
        """The LENS models' training seconds of a seed (5 out-of-fold, 1 on all training sources)."""
        runs = [*json.loads(cache_file(cache, "past", f"{LENS}_seed{seed}").read_text())["runs"],
                *json.loads(cache_file(cache, "past", f"{LENS}_seed{seed}_heldout").read_text())["runs"]]
        return float(sum(r["seconds"] for r in runs))

    def summarise(label: str, runs: list[dict[str, Any]]) -> None:
        mean = {k: _mean([r[k] for r in runs]) for k in runs[0] if k not in ("ci", "chosen")}
        sd = {k: _sd([r[k] for r in runs]) for k in runs[0] if k not in ("ci", "chosen")}
        print(f"{'  mean':46s} {'':4s} {mean['seconds']:5.1f} {_f(mean['cv'])} | {_row(mean)}")
        print(f"{'  sd':46s} {'':4s} {'':5s} {'':6s} | {_row(sd)}", flush=True)
        recorded.append({"configuration": label, "runs": runs, "mean": mean, "sd": sd})

    for label, names, learner in configurations:
        runs = []
        for seed in SEEDS:
            started = time.perf_counter()
            train, _ = split_heldout(train_all, 0.1, seed)  # as train_metric holds out 10% of the sources
            lens = f"seed{seed}" if LENS in names else None
            systems = [system_of[s.output_id] for s in train]
            config = BlendConfig(suite=",".join(n for n in names if n in SUITE) or "none",
                                 text=",".join(n for n in names if n in TEXT) or "none", learned=LENS in names,
                                 learner=learner, seed=seed, folds=CV_FOLDS,
                                 cv="sources" if cv == "like-2022" else cv, system_folds=SYSTEM_FOLDS)
            fitted = fit_blend(config, components_of(names), train, scores=cached_scores(cache, "past", lens),
                               systems=systems, criterion=criterion_of(cv, train, systems) if third else None)
            seconds = time.perf_counter() - started

            def blend(dataset: str, items: Sequence[Any], fitted: Any = fitted, lens: str | None = lens) -> list[float]:
                x = feature_matrix(fitted.components, items, cached_scores(cache, dataset, lens))
                return [float(v) for v in predict(fitted.model, x)]

            figures = test_figures(s22, tests, blend, REFERENCE_SYSTEM)
            figures.update(cv=fitted.cv_tau, seconds=seconds, chosen=fitted.chosen,
                           **({"lens seconds": lens_seconds(seed)} if lens else {}))
            runs.append(figures)
            print(f"{label:46s} {seed:4d} {seconds:5.1f} {_f(fitted.cv_tau)} | {_row(figures)} | {fitted.chosen}",
                  flush=True)
        summarise(label, runs)
    if third and ablation:  # LENS as it comes: each seed's LENS trained on all of its training sources
        label, runs = "LENS CPU default alone (no fit)", []
        for seed in SEEDS:
            train, _ = split_heldout(train_all, 0.1, seed)
            systems = [system_of[s.output_id] for s in train]
            oof = cached_scores(cache, "past", f"seed{seed}")(components_of([LENS])[0], train)
            criterion = criterion_of(cv, train, systems)
            folds = [criterion(held, [oof[int(i)] for i in held])
                     for _, held in grouped_folds([s.source_id for s in train], CV_FOLDS, seed)]

            def raw(dataset: str, items: Sequence[Any], seed: int = seed) -> list[float]:
                return cached_scores(cache, dataset, f"seed{seed}")(components_of([LENS])[0], items)

            figures = test_figures(s22, tests, raw, REFERENCE_SYSTEM)
            figures.update(cv=_mean(folds), seconds=0.0, chosen="none", **{"lens seconds": lens_seconds(seed)})
            runs.append(figures)
            print(f"{label:46s} {seed:4d} {0.0:5.1f} {_f(figures['cv'])} | {_row(figures)}", flush=True)
        summarise(label, runs)
    if ablation and not third:
        print("each component alone (its own values, no fit):")
        for name in SUITE + TEXT:
            def alone(dataset: str, items: Sequence[Any], name: str = name) -> list[float]:
                sign = -1.0 if name == "fkgl" else 1.0  # FKGL: lower is simpler
                return [sign * v for v in cached_scores(cache, dataset)(components_of([name])[0], items)]

            print(f"{name:46s} {'':4s} {'':5s} {'':6s} | {_row(test_figures(s22, tests, alone, REFERENCE_SYSTEM))}")
    if record is not None:
        record.write_text(json.dumps(recorded, indent=1, default=str))


def test_figures(s22: list[tuple[Sample, str]], tests: dict[str, list[Rated]],
                 score: Callable[[str, Sequence[Any]], list[float]], reference_system: str) -> dict[str, Any]:
    from annotation.rules import TAU_THRESHOLD
    from evaluation.stats.correlation import TauItem, kendall_tau_like, pearson
    from experiments.figures import system_figures, tau_all_ci

    samples = [s for s, _ in s22]
    values = score("s22", samples)
    items = [TauItem(source=s.source_id, output=s.output_id, category=s.category or "unknown", metric=v,
                     ratings=s.ratings) for s, v in zip(samples, values, strict=True)]
    ci = tau_all_ci(samples, values)
    without = [item for item, (_, system) in zip(items, s22, strict=True) if system != reference_system]
    tau = kendall_tau_like(items, threshold=TAU_THRESHOLD).value
    figures: dict[str, Any] = {"para": tau.get("paraphrase"), "spl": tau.get("split"), "all": tau.get("all"),
                               "ci": (ci[0], ci[1]),
                               "w/o H1": kendall_tau_like(without, threshold=TAU_THRESHOLD).value.get("all")}
    # system level on SimpEval_2022: the six systems' mean score against their mean z (pairwise accuracy over
    # the 15 system pairs, Pearson of the means), as the system-level meta-evaluation computes them
    system = system_figures(s22, values)
    figures.update({"sys acc": system["pairwise_accuracy"], "sys r": system["pearson"]})
    for name, rows in tests.items():
        predicted = score(name, rows)
        for aspect in rows[0].aspects:
            figures[f"{name} {aspect}"] = pearson(predicted, [r.aspects[aspect] for r in rows])
    return figures


def _f(value: float | None) -> str:
    return f"{value:6.3f}" if value is not None else "   n/a"


def _mean(values: list[Any]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def _sd(values: list[Any]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.stdev(present) if len(present) > 1 else None


def _row(f: dict[str, Any]) -> str:
    ci = f.get("ci")
    shown = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else " " * 15
    wiki = " ".join(_f(f.get(f"wiki-da {a}")) for a in ("fluency", "meaning", "simplicity"))
    simpda = " ".join(_f(f.get(f"simpda-2022 {a}")) for a in ("adequacy", "fluency", "simplicity"))
    taus = " ".join(_f(f.get(key)) for key in ("para", "spl", "all"))
    system = f"{_f(f.get('sys acc'))} {_f(f.get('sys r'))}"
    return f"{taus} {shown} {_f(f.get('w/o H1'))} | {wiki} | {simpda} | {system}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=("cache", "lens", "select", "evaluate"))
    parser.add_argument("--cache", type=Path, default=Path("/work/blend-cache"))
    parser.add_argument("--ablation", action="store_true")
    parser.add_argument("--extra", action="append", default=[], metavar="FEATURES:LEARNER",
                        help="evaluate: also report this feature set and learner (not chosen), e.g. all:pairwise")
    parser.add_argument("--cv", choices=("sources", "sources-systems", "like-2022"), default="sources",
                        help="selection's cross-validation: hold out sources (the first configuration) or sources "
                             "and systems together (the second); the third: sources or like-2022 (with --third)")
    parser.add_argument("--third", action="store_true",
                        help="the third configuration: THIRD_FEATURE_SETS (with LENS), criterion --cv sources or "
                             "like-2022")
    parser.add_argument("--lens-contexts", nargs="+", default=["select", "0", "1", "2"],
                        help="lens: the out-of-fold LENS scores to compute: 'select' (selection's folds, under the "
                             "guard) and/or seeds (each seed's folds, and its LENS on all training sources)")
    parser.add_argument("--threads", type=int, default=2, help="lens: torch threads (at most 2 here)")
    args = parser.parse_args()
    root = data_root()
    if args.third and args.cv not in CRITERIA:
        parser.error(f"--third: --cv one of {', '.join(CRITERIA)}")
    if args.cv == "like-2022" and not args.third:
        parser.error("--cv like-2022 is the third configuration's criterion: add --third")
    selection_file = args.cache / ("selection.json" if args.cv == "sources" else f"selection-{args.cv}.json")
    if args.third:
        selection_file = args.cache / f"selection-third-{args.cv}.json"
    if args.step == "cache":
        from experiments.datasets import load_simpeval_2022

        compute_cache(args.cache, "past", training_samples(root))
        compute_cache(args.cache, "s22", [s for s, _ in load_simpeval_2022(root)])
        compute_cache(args.cache, "wiki-da", wiki_da(root))
        compute_cache(args.cache, "simpda-2022", simpda_2022(root))
    elif args.step == "lens":
        import torch

        from experiments import blend_lens
        from experiments.datasets import load_simpeval_2022

        torch.set_num_threads(max(1, min(args.threads, 2)))
        tests: dict[str, Sequence[Any]] | None = None  # read once, by the first seed's context
        for context in args.lens_contexts:
            if context == "select":
                blend_lens.selection_scores(root, args.cache)
            else:
                if tests is None:
                    tests = {"s22": [s for s, _ in load_simpeval_2022(root)], "wiki-da": wiki_da(root),
                             "simpda-2022": simpda_2022(root)}
                blend_lens.seed_scores(root, args.cache, int(context), tests)
    elif args.step == "select":
        from metrics.blend.learners import LEARNERS

        assert SECOND_GRID_LEARNERS == LEARNERS  # "auto": every setting of every learner, as declared
        result = select(root, args.cache, cv=args.cv, learner="auto",
                        feature_sets=THIRD_FEATURE_SETS if args.third else None)
        selection_file.write_text(json.dumps(result, indent=1))
        print("chosen:", result["chosen"])
    else:
        extra = [tuple(e.split(":", 1)) for e in args.extra]
        for features, learner in extra:
            sets = THIRD_FEATURE_SETS if args.third else FEATURE_SETS
            if features not in sets or learner not in ("ridge", "pairwise", "kernel"):
                parser.error(f"--extra {features}:{learner}: features one of {', '.join(sets)}, learner one "
                             "of ridge, pairwise, kernel")
        evaluate(root, args.cache, json.loads(selection_file.read_text())["chosen"], ablation=args.ablation,
                 extra=[(f, lr) for f, lr in extra], third=args.third,
                 record=selection_file.with_name(selection_file.name.replace("selection", "evaluation"))
                 if args.third else None)


if __name__ == "__main__":
    main()
