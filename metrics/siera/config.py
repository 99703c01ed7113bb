"""SIERA's options (the paper's §5 settings are the defaults, except ``seeds``: 1 here, 10 in the paper)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from metrics.lens.config import DEFAULT_ENCODER, MAX_TOKENS

SILVER_FILTERS = ("token_f1", "bertscore")
"""Similarities the +Silver augmentation can filter its intermediate sentences with."""


class SieraConfigError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclass(frozen=True)
class SieraConfig:
    """How a SIERA version is trained.

    ``seeds``: one model per seed, their probabilities averaged at scoring time. ``silver``: add the
    intermediate sentences of the edit-subset augmentation, kept when ``silver_filter`` finds them close
    to both ends (``token_f1``: bag-of-tokens F1; ``bertscore``: BERTScore F1 on the suite's encoder, as
    the paper filters, minutes more on a CPU). ``max_pairs`` caps the (source, reference)
    pairs before both orders are taken (the paper: 20,000), ``max_sources`` the corpus rows (0: all).
    ``max_length`` caps the tokens of a joined pair, read in either order (the encoder's limit applies too);
    as REFEREE's, it reads SimpEval_2022's longest (source, output) pairs whole, which 128 did not (three
    small seeds on a CPU: SimpEval_2022 tau_all 0.301, 0.331, 0.295 at 128; 0.307, 0.331, 0.289 read whole).
    """

    encoder: str = DEFAULT_ENCODER
    max_length: int = MAX_TOKENS
    epochs: int = 10
    batch_size: int = 16
    lr: float = 1e-4
    trainable_layers: int = 1
    validation_fraction: float = 0.2
    patience: int = 2
    seeds: tuple[int, ...] = (0,)
    silver: bool = False
    silver_per_pair: int = 4
    silver_filter: str = "token_f1"
    max_pairs: int = 20000
    max_sources: int = 0
    device: str | None = None

    def __post_init__(self) -> None:
        seeds = tuple(int(s) for s in self.seeds)
        if not seeds or len(set(seeds)) != len(seeds):
            raise SieraConfigError("seeds", "one or more distinct integers")
        object.__setattr__(self, "seeds", seeds)
        for key in ("epochs", "patience", "max_pairs", "silver_per_pair"):
            if int(getattr(self, key)) < 1:
                raise SieraConfigError(key, "must be at least 1")
        if self.batch_size < 2 or self.max_length < 2:
            raise SieraConfigError("batch_size", "batch_size and max_length must be at least 2")
        if not 0.0 < self.validation_fraction < 1.0:
            raise SieraConfigError("validation_fraction", "must be in (0, 1)")
        if self.silver_filter not in SILVER_FILTERS:
            raise SieraConfigError("silver_filter", f"one of {', '.join(SILVER_FILTERS)}")
        if self.lr <= 0:
            raise SieraConfigError("lr", "must be positive")
        if self.trainable_layers < 0 or self.max_sources < 0:
            raise SieraConfigError("trainable_layers", "trainable_layers and max_sources must be >= 0")

    @property
    def corpus_rows_used(self) -> int:
        """How many corpus rows (in order) the run draws its pairs from: 0 for all."""
        return self.max_sources

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["seeds"] = list(self.seeds)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SieraConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SieraConfigError(unknown[0], f"unknown SIERA option; known: {', '.join(sorted(known))}")
        values = dict(data)
        if "seeds" in values:
            raw = values["seeds"]
            if isinstance(raw, int):
                raw = [raw]
            if not isinstance(raw, list | tuple) or not all(isinstance(s, int) for s in raw):
                raise SieraConfigError("seeds", "a list of integers, e.g. [0, 1, 2]")
            values["seeds"] = tuple(raw)
        try:
            return cls(**values)
        except TypeError as exc:
            raise SieraConfigError("options", str(exc)) from None
