"""The blend's learners, in numpy, and the grouped cross-validation that chooses one.

Every learner standardises the features on its training rows, then fits:

* ``ridge``: least squares with an L2 penalty ``alpha`` (BLEND's linear baseline);
* ``pairwise``: ridge on the differences between outputs of the same source, to their rating differences:
  it learns to order a source's outputs, which is what the tau-like counts, and ignores between-source
  offsets of the ratings. Its rows are pairs (many more than outputs), so its grid reaches stronger
  penalties than ridge's;
* ``kernel``: kernel ridge with an RBF kernel of width ``gamma`` (per standardised feature), a small
  stand-in for BLEND's SVR: non-linear, closed form, and bounded by ``KERNEL_ROWS_MAX`` training rows.

A fitted model is a JSON document (:func:`fit`), read back by :func:`predict`.

Cross-validation (:func:`cross_validate`) holds out sources (``sources``: what scoring a new source's
outputs of known systems needs) or, given each row's system, sources and systems together
(``sources-systems``: every fold fits on the other sources' outputs of the other systems and is scored on the
held-out systems' outputs of the held-out sources, what scoring a new system's outputs of new sources needs).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from metrics.learned.config import Json

Array = NDArray[np.float64]
LEARNERS = ("ridge", "pairwise", "kernel")
CV_SCHEMES = ("sources", "sources-systems")
"""What cross-validation holds out: sources, or sources and systems together (see the module docstring)."""
KERNEL_ROWS_MAX = 6000
"""Training rows of a kernel model (its Gram matrix is rows², solved in rows³)."""
PAIRS_PER_SOURCE_MAX = 2000
"""Within-source pairs the pairwise learner reads per source (a source's first ones, in order)."""


@dataclass(frozen=True)
class Candidate:
    """A learner and its settings."""

    learner: str
    alpha: float
    gamma: float = 0.0

    @property
    def label(self) -> str:
        extra = f",gamma={self.gamma:g}" if self.learner == "kernel" else ""
        return f"{self.learner}(alpha={self.alpha:g}{extra})"


def candidates(learner: str = "auto") -> list[Candidate]:
    """The settings cross-validation chooses among: every learner's (``auto``) or one learner's."""
    grid = [Candidate("ridge", a) for a in (0.1, 1.0, 10.0, 100.0)]
    grid += [Candidate("pairwise", a) for a in (0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0)]
    grid += [Candidate("kernel", a, g) for a in (0.3, 3.0) for g in (0.02, 0.1)]
    return [c for c in grid if learner in ("auto", c.learner)]


def _standardise(x: Array) -> tuple[Array, Array]:
    mean = x.mean(axis=0) if len(x) else np.zeros(x.shape[1])
    scale = x.std(axis=0) if len(x) else np.ones(x.shape[1])
    return np.asarray(mean, dtype=np.float64), np.where(scale > 1e-12, scale, 1.0)


def _ridge(x: Array, y: Array, alpha: float) -> Array:
    gram = x.T @ x + alpha * np.eye(x.shape[1])
    return np.asarray(np.linalg.solve(gram, x.T @ y), dtype=np.float64)


def _pairs(x: Array, y: Array, groups: Sequence[str]) -> tuple[Array, Array]:
    by_group: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        by_group.setdefault(group, []).append(index)
    left: list[int] = []
    right: list[int] = []
    for rows in by_group.values():
        pairs = [(i, j) for a, i in enumerate(rows) for j in rows[a + 1:]][:PAIRS_PER_SOURCE_MAX]
        left += [i for i, _ in pairs]
        right += [j for _, j in pairs]
    return x[left] - x[right], y[left] - y[right]


def _rbf(a: Array, b: Array, gamma: float) -> Array:
    distances = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    kernel: Array = np.exp(-gamma * np.maximum(distances, 0.0))
    return kernel


def fit(candidate: Candidate, x: Array, y: Array, groups: Sequence[str]) -> dict[str, Json]:
    """Fit ``candidate`` to rows ``x`` (``[n, features]``) and targets ``y``; ``groups`` names each row's
    source (the pairwise learner pairs outputs of one source). Returns the model as JSON."""
    if len(x) == 0:
        raise ValueError("a blend needs at least one rated output to fit")
    mean, scale = _standardise(x)
    z = (x - mean) / scale
    model: dict[str, Json] = {"learner": candidate.learner, "alpha": candidate.alpha, "gamma": candidate.gamma,
                              "mean": mean.tolist(), "scale": scale.tolist()}
    bias = float(y.mean())
    weights: Array
    if candidate.learner == "ridge":
        weights = _ridge(z, y - bias, candidate.alpha)
    elif candidate.learner == "pairwise":
        dx, dy = _pairs(z, y, groups)
        weights = _ridge(dx, dy, candidate.alpha) if len(dx) else np.zeros(x.shape[1])
        bias = float(y.mean() - (z @ weights).mean())
    elif candidate.learner == "kernel":
        if len(x) > KERNEL_ROWS_MAX:
            raise ValueError(f"the kernel learner fits at most {KERNEL_ROWS_MAX} rated outputs (got {len(x)}); "
                             "choose learner ridge or pairwise")
        gram = _rbf(z, z, candidate.gamma)
        weights = np.asarray(np.linalg.solve(gram + candidate.alpha * np.eye(len(z)), y - bias), dtype=np.float64)
        model["support"] = z.tolist()
    else:
        raise ValueError(f"unknown learner {candidate.learner!r}; one of: {', '.join(LEARNERS)}")
    model.update(weights=weights.tolist(), bias=bias)
    return model


def predict(model: dict[str, Any], x: Array) -> Array:
    """The fitted model's values of rows ``x``."""
    z = (x - np.asarray(model["mean"])) / np.asarray(model["scale"])
    weights = np.asarray(model["weights"], dtype=np.float64)
    if model["learner"] == "kernel":
        support = np.asarray(model["support"], dtype=np.float64).reshape(-1, z.shape[1])
        values: Array = _rbf(z, support, float(model["gamma"])) @ weights + float(model["bias"])
        return values
    linear: Array = z @ weights + float(model["bias"])
    return linear


def grouped_folds(groups: Sequence[str], folds: int, seed: int, *, systems: Sequence[str] | None = None,
                  system_folds: int = 0) -> list[tuple[Array, Array]]:
    """(train rows, held-out rows) splits, shuffled by ``seed``.

    Without ``systems``: ``folds`` splits whose held-out sources partition the sources (no source is on both
    sides of a split). With ``systems`` (each row's system) and ``system_folds``: the systems are partitioned
    too, and each (source fold, system fold) cell is a split that holds out its sources' outputs of its
    systems and trains on the other sources' outputs of the other systems (the rest, an output of a held-out
    source by a kept system or the other way round, is on neither side): ``folds * system_folds`` splits,
    no source and no system on both sides of one.
    """
    sources = sorted(set(groups))
    if folds < 2 or len(sources) < folds:
        raise ValueError(f"{folds}-fold cross-validation needs at least {max(folds, 2)} sources "
                         f"(got {len(sources)})")
    rng = random.Random(seed)
    rng.shuffle(sources)
    fold_of = {source: index % folds for index, source in enumerate(sources)}
    labels = np.asarray([fold_of[g] for g in groups])
    rows = np.arange(len(groups))
    if systems is None:
        return [(rows[labels != f], rows[labels == f]) for f in range(folds)]
    if len(systems) != len(groups):
        raise ValueError(f"systems names {len(systems)} rows, groups {len(groups)}")
    names = sorted(set(systems))
    if system_folds < 2 or len(names) < system_folds:
        raise ValueError(f"{system_folds} system folds need at least {max(system_folds, 2)} systems "
                         f"(got {len(names)})")
    rng.shuffle(names)
    system_fold_of = {name: index % system_folds for index, name in enumerate(names)}
    system_labels = np.asarray([system_fold_of[s] for s in systems])
    return [(rows[(labels != f) & (system_labels != g)], rows[(labels == f) & (system_labels == g)])
            for f in range(folds) for g in range(system_folds)]


Criterion = Callable[[Array, Array], float | None]
"""``criterion(held-out rows, their predictions)``: larger is better (None: undefined on these rows)."""


@dataclass(frozen=True)
class CrossValidation:
    candidate: Candidate
    mean: float | None
    folds: list[float | None]


def cross_validate(cands: Sequence[Candidate], x: Array, y: Array, groups: Sequence[str], *, folds: int, seed: int,
                   criterion: Criterion, on_candidate: Callable[[CrossValidation], None] | None = None,
                   systems: Sequence[str] | None = None, system_folds: int = 0) -> list[CrossValidation]:
    """Each candidate's criterion on every split's held-out rows (fitted on its training rows; the splits of
    :func:`grouped_folds`) and its mean over the splits where it is defined."""
    splits = grouped_folds(groups, folds, seed, systems=systems, system_folds=system_folds)
    names = list(groups)
    results = []
    for candidate in cands:
        figures: list[float | None] = []
        for train_rows, test_rows in splits:
            if not len(test_rows) or not len(train_rows):  # a cell no row falls in
                figures.append(None)
                continue
            model = fit(candidate, x[train_rows], y[train_rows], [names[i] for i in train_rows])
            figures.append(criterion(test_rows, predict(model, x[test_rows])))
        defined = [f for f in figures if f is not None]
        result = CrossValidation(candidate, float(np.mean(defined)) if defined else None, figures)
        results.append(result)
        if on_candidate is not None:
            on_candidate(result)
    return results


def best(results: Sequence[CrossValidation]) -> CrossValidation:
    """The candidate with the highest mean criterion (the first on a tie; the first when none is defined)."""
    ranked = [r for r in results if r.mean is not None]
    return max(ranked, key=lambda r: r.mean or 0.0) if ranked else results[0]
