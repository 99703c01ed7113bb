"""Plain data types crossing the package boundary (training samples, scoring inputs, predictions)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple


@dataclass(frozen=True)
class Sample:
    """One rated system output.

    Attributes:
        source_id: Identifier of the complex sentence; samples sharing it are batched together.
        output_id: Identifier of the system output (unique within the source).
        complex: The complex (input) sentence.
        output: The system output (simplification) being rated.
        references: Human simplifications of ``complex``; at least one for LENS (a reference-free metric
            such as REFEREE also trains on samples without).
        z: Training target, the (mean) z-scored human rating.
        category: Simplification type ("paraphrase", "split", "deletion") or None.
        ratings: Rater (or rating slot) -> raw 0-100 rating, used for the Kendall tau-like.
    """

    source_id: str
    output_id: str
    complex: str
    output: str
    references: tuple[str, ...]
    z: float
    category: str | None = None
    ratings: Mapping[str, float] = field(default_factory=dict)


class ScoreInput(NamedTuple):
    """A (complex, output, references) triple to score; a plain 3-tuple works too."""

    complex: str
    output: str
    references: Sequence[str]


def z_to_score(z: float) -> float:
    """Rescale a z-score to 0-100 as the area under the standard normal curve: 100 * Phi(z)."""
    return 50.0 * (1.0 + math.erf(z / math.sqrt(2.0)))


@dataclass(frozen=True)
class Prediction:
    """LENS output for one (complex, output, references) triple.

    Attributes:
        z: Raw prediction, the maximum over references.
        score: ``100 * Phi(z)``, in [0, 100].
        per_reference: Raw prediction against each reference, in input order.
        truncated: True when one of the texts was cut to the encoder's maximum length.
    """

    z: float
    score: float
    per_reference: list[float]
    truncated: bool = False

    @classmethod
    def from_per_reference(cls, values: Sequence[float], *, truncated: bool = False) -> Prediction:
        best = max(values)
        return cls(z=best, score=z_to_score(best), per_reference=list(values), truncated=truncated)
