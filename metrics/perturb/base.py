"""What a perturbation is: a text, a magnitude (0-100% of its eligible spans) and a seed in; the
perturbed text and what changed out, or a report that the text has no eligible span."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["up", "down", "none"]
"""How an ideal quality metric (higher = better) should move as the perturbation grows."""

CRITERIA = ("informativeness", "simplification", "coherence", "faithfulness", "lens")


class PerturbationError(ValueError):
    """Bad arguments for a perturbation (unknown name, magnitude outside 0-100, missing context)."""


@dataclass(frozen=True)
class Change:
    """One edit: ``kind`` is delete / insert / replace / move; ``before`` and ``after`` the texts."""

    kind: str
    before: str
    after: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Perturbed:
    """The result of one perturbation of one text.

    ``eligible`` is how many spans the perturbation could touch in this text and ``applied`` how many it
    touched; ``skipped`` says why nothing could be done (no eligible span) and is ``None`` otherwise.
    """

    perturbation: str
    text: str
    magnitude: float
    eligible: int
    applied: int
    changes: tuple[Change, ...] = ()
    skipped: str | None = None

    @property
    def no_eligible_span(self) -> bool:
        return self.skipped is not None


@dataclass(frozen=True)
class Context:
    """What a perturbation may need besides the text.

    Attributes:
        source: The complex sentence the text simplifies (``copy`` moves towards it).
        references: Other texts of the same source (salience of words for ``delete``).
        simplification: A human simplification of the text (``simplify`` moves towards it).
        in_domain: Sentences of other sources of the same corpus (``add_in_domain``).
        out_of_domain: Sentences of an unrelated domain (``add_out_of_domain``).
        entities: Entity label -> entity texts seen in the corpus (``entity_swap``).
    """

    source: str = ""
    references: tuple[str, ...] = ()
    simplification: str | None = None
    in_domain: Sequence[str] = ()
    out_of_domain: Sequence[str] = ()
    entities: Mapping[str, Sequence[str]] = field(default_factory=dict)


PerturbFn = Callable[[str, float, random.Random, Context], tuple[str, int, int, list[Change], str | None]]
"""``fn(text, magnitude_percent, rng, context) -> (text, eligible, applied, changes, skipped)``."""


@dataclass(frozen=True)
class Perturbation:
    """A registered perturbation: its name, criterion, expected direction and function."""

    name: str
    criterion: str
    expected: Direction
    description: str
    fn: PerturbFn

    def __call__(self, text: str, *, magnitude: float, seed: int, context: Context | None = None) -> Perturbed:
        """Perturb ``magnitude`` percent (0-100) of ``text``'s eligible spans, chosen by ``seed``.

        The spans are ordered once per (seed, text), so a larger magnitude touches a superset of the spans a
        smaller one touches.
        """
        if not 0 <= magnitude <= 100:
            raise PerturbationError(f"{self.name}: magnitude must be between 0 and 100 (percent), got {magnitude}")
        rng = random.Random(f"{self.name}|{seed}|{text}")
        out, eligible, applied, changes, skipped = self.fn(text, magnitude, rng, context or Context())
        return Perturbed(self.name, out, float(magnitude), eligible, applied, tuple(changes), skipped)


def share(magnitude: float, eligible: int) -> int:
    """How many of ``eligible`` spans ``magnitude`` percent is, rounding halves up (1 of 1 at 50%)."""
    return min(eligible, int(magnitude * eligible / 100 + 0.5))


REGISTRY: dict[str, Perturbation] = {}


def register(name: str, criterion: str, expected: Direction, description: str) -> Callable[[PerturbFn], PerturbFn]:
    if criterion not in CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r}")

    def wrap(fn: PerturbFn) -> PerturbFn:
        REGISTRY[name] = Perturbation(name, criterion, expected, description, fn)
        return fn

    return wrap


def get_perturbation(name: str) -> Perturbation:
    try:
        return REGISTRY[name]
    except KeyError:
        raise PerturbationError(f"unknown perturbation {name!r}; known: {', '.join(REGISTRY)}") from None


def perturb(name: str, text: str, *, magnitude: float, seed: int, context: Context | None = None) -> Perturbed:
    """Apply the perturbation called ``name`` (see :data:`REGISTRY`)."""
    return get_perturbation(name)(text, magnitude=magnitude, seed=seed, context=context)
