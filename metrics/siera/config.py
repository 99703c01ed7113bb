"""SIERA's options (the paper's §5 settings are the defaults, except ``seeds``: 1 here, 10 in the paper)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from metrics.learned.config import (
    BATCH_SIZE_MAX,
    CORPUS_SOURCES_MAX,
    DEFAULT_ENCODER,
    EPOCHS_MAX,
    LAYERS_MAX,
    MAX_LENGTH_MAX,
    MAX_TOKENS,
    PAIRS_MAX,
    PRECISIONS,
    PROFILES,
    SEED_MAX,
    SEED_MIN,
    SEEDS_MAX,
    SILVER_PER_PAIR_MAX,
    LearnedConfig,
    Rule,
)

SILVER_FILTERS = ("token_f1", "bertscore")
"""Similarities the +Silver augmentation can filter its intermediate sentences with."""


def _count(minimum: int, maximum: int) -> Rule:
    return Rule("int", minimum=minimum, maximum=maximum)


@dataclass(frozen=True)
class SieraConfig(LearnedConfig):
    """How a SIERA version is trained.

    ``seeds``: one model per seed, their probabilities averaged at scoring time. ``silver``: add the
    intermediate sentences of the edit-subset augmentation, kept when ``silver_filter`` finds them close
    to both ends (``token_f1``: bag-of-tokens F1; ``bertscore``: BERTScore F1 on the suite's encoder, as
    the paper filters, minutes more on a CPU). ``max_pairs`` caps the (source, reference)
    pairs before both orders are taken (the paper: 20,000), ``max_sources`` the corpus rows (0: all).
    ``heldout_fraction`` of the corpus sources are held out; their pairs' loss selects each seed's best epoch
    and ends its training after ``patience`` epochs without improvement (stored versions may name it
    ``validation_fraction``). ``max_length`` caps the tokens of a joined pair, read in either order (the
    encoder's limit applies too). ``precision`` is the autocast of training and validation (as REFEREE's);
    ``profile`` is "cpu" (these defaults) or "research" (see ``metrics.learned.research``).
    """

    LEGACY_KEYS = {"validation_fraction": "heldout_fraction"}

    encoder: str = field(default=DEFAULT_ENCODER, metadata={"rule": Rule("str", maximum=500)})
    max_length: int = field(default=MAX_TOKENS, metadata={"rule": _count(2, MAX_LENGTH_MAX)})
    epochs: int = field(default=10, metadata={"rule": _count(1, EPOCHS_MAX)})
    batch_size: int = field(default=16, metadata={"rule": _count(2, BATCH_SIZE_MAX)})
    lr: float = field(default=1e-4, metadata={"rule": Rule("float", minimum=0, above=True)})
    trainable_layers: int = field(default=1, metadata={"rule": _count(0, LAYERS_MAX)})
    heldout_fraction: float = field(default=0.2, metadata={"rule": Rule(
        "float", minimum=0, maximum=1, above=True, below=True)})
    patience: int = field(default=2, metadata={"rule": _count(1, EPOCHS_MAX)})
    seeds: tuple[int, ...] = field(default=(0,), metadata={"rule": Rule(
        "ints", minimum=SEED_MIN, maximum=SEED_MAX, distinct=True, max_items=SEEDS_MAX,
        hint=f"1 to {SEEDS_MAX} distinct integers from {SEED_MIN} to {SEED_MAX}, e.g. [0, 1, 2]")})
    silver: bool = field(default=False, metadata={"rule": Rule("bool")})
    silver_per_pair: int = field(default=4, metadata={"rule": _count(1, SILVER_PER_PAIR_MAX)})
    silver_filter: str = field(default="token_f1", metadata={"rule": Rule("str", choices=SILVER_FILTERS)})
    max_pairs: int = field(default=20000, metadata={"rule": _count(1, PAIRS_MAX)})
    max_sources: int = field(default=0, metadata={"rule": _count(0, CORPUS_SOURCES_MAX)})
    device: str | None = field(default=None, metadata={"rule": Rule("str", optional=True, settable=False)})
    precision: str = field(default="fp32", metadata={"rule": Rule("str", choices=PRECISIONS)})
    profile: str = field(default="cpu", metadata={"rule": Rule("str", choices=PROFILES)})

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Self:
        """As the base's; one seed may be given as an integer."""
        seeds = data.get("seeds")
        return super().from_dict({**data, "seeds": [seeds]} if isinstance(seeds, int) else data)

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> Self:
        """As :meth:`from_dict`; the family's ``seed`` option is SIERA's first (or only) seed."""
        values = dict(options)
        if "seed" in values:
            seed = values.pop("seed")
            values.setdefault("seeds", [seed])
        return cls.from_dict(values)

    @property
    def first_seed(self) -> int:
        return self.seeds[0]

    @property
    def corpus_rows_used(self) -> int:
        """How many corpus rows (in order) the run draws its pairs from: 0 for all."""
        return self.max_sources
