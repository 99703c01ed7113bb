"""REFEREE in the learned-metric family: its config, training, checkpoint loading and score signature.

Importing this module registers the kind and imports neither torch nor Django.
"""

from __future__ import annotations

from dataclasses import dataclass

from metrics.learned.kinds import PairKind, VersionInfo, register_kind
from metrics.referee.config import RefereeConfig


@dataclass(frozen=True)
class RefereeKind(PairKind):
    """REFEREE: reference-free; the value is the predicted z-scored rating (of one aspect when trained so)."""

    def signature_extra(self, version: VersionInfo) -> str:
        aspect = version.hyperparameters.get("aspect")  # fine-tuned on one aspect of the ratings
        return f"aspect:{aspect}|" if aspect else ""


REFEREE = register_kind(RefereeKind("referee", "REFEREE", RefereeConfig, needs_campaigns=True, uses_corpora=True,
                                    package="metrics.referee", scorer="RefereeScorer"))
