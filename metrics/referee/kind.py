"""REFEREE in the learned-metric family: its config, training, checkpoint loading and score signature.

Importing this module registers the kind and imports neither torch nor Django.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from metrics.learned.config import LearnedConfig
from metrics.learned.kinds import LearnedKind, Scorer, TrainingInputs, VersionInfo, register_kind
from metrics.referee.config import RefereeConfig

if TYPE_CHECKING:
    from metrics.learned.callbacks import Callback, TrainResult


@dataclass(frozen=True)
class RefereeKind(LearnedKind):
    """REFEREE: reference-free; the value is the predicted z-scored rating (of one aspect when trained so)."""

    def train(self, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
              callbacks: Sequence[Callback]) -> TrainResult:
        from metrics.referee.training import train

        assert isinstance(config, RefereeConfig)
        return train(config, inputs.corpus, inputs.train, inputs.heldout, out_dir=out_dir, callbacks=callbacks)

    def load(self, path: Path, *, device: str | None = None, precision: str = "fp32") -> Scorer:
        from metrics.referee.scorer import RefereeScorer

        return RefereeScorer.load(path, device=device)

    def signature_extra(self, version: VersionInfo) -> str:
        aspect = version.hyperparameters.get("aspect")  # fine-tuned on one aspect of the ratings
        return f"aspect:{aspect}|" if aspect else ""


REFEREE = register_kind(RefereeKind("referee", "REFEREE", RefereeConfig, needs_campaigns=True, uses_corpora=True))
