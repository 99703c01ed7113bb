"""SIERA in the learned-metric family: its config, training and checkpoint loading.

Importing this module registers the kind and imports neither torch nor Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from metrics.learned.config import LearnedConfig
from metrics.learned.kinds import LearnedKind, Scorer, TrainingInputs, register_kind
from metrics.siera.config import SieraConfig

if TYPE_CHECKING:
    from metrics.learned.callbacks import Callback, TrainResult


@dataclass(frozen=True)
class SieraKind(LearnedKind):
    """SIERA: trains on a corpus of references only; the value is P(output simpler than its source)."""

    def train(self, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
              callbacks: Sequence[Callback]) -> TrainResult:
        from metrics.siera.training import train

        assert isinstance(config, SieraConfig)
        return train(config, inputs.corpus, out_dir=out_dir, callbacks=callbacks)

    def load(self, path: Path, *, device: str | None = None, precision: str = "fp32") -> Scorer:
        from metrics.siera.scorer import SieraScorer

        return SieraScorer.load(path, device=device)


SIERA = register_kind(SieraKind("siera", "SIERA", SieraConfig, needs_campaigns=False, uses_corpora=True,
                                value_name="p_simpler"))
