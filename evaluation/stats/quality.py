"""Quality control of annotators: attention items, the one-sided Mann-Whitney U test and per-annotator verdicts.

Pure: no Django. Appraise's rule for crowd evaluation: an annotator is reliable when their ratings of the
original outputs are significantly higher than their ratings of degraded copies of the same outputs
(one-sided Mann-Whitney U, p < 0.05). ASSET (§3.1, §5) adds unrelated "no relation" pairs and qualification.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache

ALPHA = 0.05
MIN_PAIRS = 3  # fewer degraded copies rated: no MWU verdict yet
MIN_SECONDS_PER_SOURCE = 15.0  # a source with several outputs cannot be read, grouped and rated faster
MAX_REPEAT_GAP = 20.0  # mean absolute difference (0-100 scale) between the two ratings of a repeated output
MIN_R_WITH_OTHERS = 0.2


# --- Degraded copies ------------------------------------------------------------------------------------


def degrade(text: str, *, rng: random.Random, filler: Sequence[str] = ()) -> str:
    """A degraded copy of an output (Appraise's "BAD" item): a span of about a third of the words is
    replaced by words drawn from `filler` (another sentence), or scrambled when no filler is given.
    The copy always differs from the text when it has two or more words."""
    words = text.split()
    if len(words) < 2:
        return text + " " + " ".join(filler[:3]) if filler else text
    span = max(2, round(len(words) / 3))
    span = min(span, len(words))
    start = rng.randrange(0, len(words) - span + 1)
    piece = words[start:start + span]
    pool = [w for w in filler if w not in piece]
    if pool:
        new = [rng.choice(pool) for _ in piece]
    else:
        new = piece[:]
        for _ in range(10):
            rng.shuffle(new)
            if new != piece:
                break
        else:
            new = piece[::-1] if piece[::-1] != piece else piece + ["the"]
    return " ".join(words[:start] + new + words[start + span:])


# --- Mann-Whitney U ----------------------------------------------------------------------------------


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) and the sizes of the tie groups."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


@cache
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """Number of arrangements giving each U = 0..n1*n2 (no ties), by the usual recurrence."""
    if n1 == 0 or n2 == 0:
        return (1,)
    a = _u_counts(n1 - 1, n2)  # the largest value is in sample 1: it beats all n2
    b = _u_counts(n1, n2 - 1)
    out = [0] * (n1 * n2 + 1)
    for u, c in enumerate(a):
        out[u + n2] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


@dataclass(frozen=True)
class MWUResult:
    u: float  # U of the first sample
    p: float  # one-sided: the first sample tends to be greater
    method: str  # "exact" | "asymptotic"


def mann_whitney_greater(x: Sequence[float], y: Sequence[float], *, method: str = "auto") -> MWUResult:
    """One-sided Mann-Whitney U test that `x` is stochastically greater than `y`.

    ``asymptotic``: normal approximation with tie correction and continuity correction (scipy's
    ``method="asymptotic"``); ``exact``: the exact distribution of U (no ties); ``auto``: exact when there
    are no ties and both samples have at most 8 values, else asymptotic.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    ranks, ties = _ranks(list(x) + list(y))
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    has_ties = any(t > 1 for t in ties)
    if method == "auto":
        method = "exact" if not has_ties and max(n1, n2) <= 8 else "asymptotic"
    if method == "exact":
        counts = _u_counts(n1, n2)
        total = sum(counts)
        k = math.ceil(u - 1e-9)
        return MWUResult(u, sum(counts[k:]) / total, "exact")
    if method != "asymptotic":
        raise ValueError(f"unknown method {method!r}")
    n = n1 + n2
    mean = n1 * n2 / 2
    tie_term = sum(t**3 - t for t in ties) / (n * (n - 1)) if n > 1 else 0.0
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:
        return MWUResult(u, 1.0 if u <= mean else 0.0, "asymptotic")
    z = (u - mean - 0.5) / math.sqrt(var)
    return MWUResult(u, 0.5 * math.erfc(z / math.sqrt(2)), "asymptotic")


# --- Per-annotator verdicts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class QualityRatings:
    """One annotator's quality-control evidence (all on the 0-100 scale)."""

    rater: str
    originals: Sequence[float] = ()  # ratings of the originals of the degraded copies they rated
    degraded: Sequence[float] = ()  # ratings of those degraded copies
    unrelated: Sequence[float] = ()  # ratings of unrelated outputs
    repeats: Sequence[tuple[float, float]] = ()  # (first, repeated) ratings of the same output
    seconds_per_source: Sequence[float] = ()
    r_with_others: float | None = None


@dataclass
class Verdict:
    rater: str
    n_pairs: int
    mwu_u: float | None
    mwu_p: float | None
    reliable: bool | None  # None: too few degraded copies rated
    unrelated_mean: float | None
    repeat_gap: float | None  # mean |first - repeat|
    n_repeats: int
    median_seconds: float | None
    r_with_others: float | None
    reasons: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.reasons)


def _median(values: Sequence[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def annotator_verdict(q: QualityRatings) -> Verdict:
    """Appraise's MWU rule plus repeat agreement, speed and correlation with the others; each failed check
    adds a reason."""
    reasons: list[str] = []
    n_pairs = min(len(q.originals), len(q.degraded))
    u = p = None
    reliable = None
    if n_pairs >= MIN_PAIRS:
        result = mann_whitney_greater(q.originals, q.degraded)
        u, p = result.u, result.p
        reliable = p < ALPHA
        if not reliable:
            reasons.append(f"originals not rated above their degraded copies (MWU p = {p:.3g} ≥ {ALPHA})")
    unrelated_mean = math.fsum(q.unrelated) / len(q.unrelated) if q.unrelated else None
    gap = math.fsum(abs(a - b) for a, b in q.repeats) / len(q.repeats) if q.repeats else None
    if gap is not None and gap > MAX_REPEAT_GAP:
        reasons.append(f"rates repeated outputs {gap:.0f} points apart on average (> {MAX_REPEAT_GAP:.0f})")
    median_seconds = _median(q.seconds_per_source)
    if median_seconds is not None and median_seconds < MIN_SECONDS_PER_SOURCE:
        reasons.append(f"{median_seconds:.0f} s per source (median) is too fast to have read them "
                       f"(< {MIN_SECONDS_PER_SOURCE:.0f} s)")
    if q.r_with_others is not None and q.r_with_others < MIN_R_WITH_OTHERS:
        reasons.append(f"correlation with the other raters r = {q.r_with_others:.2f} (< {MIN_R_WITH_OTHERS})")
    return Verdict(q.rater, n_pairs, u, p, reliable, unrelated_mean, gap, len(q.repeats), median_seconds,
                   q.r_with_others, reasons)
