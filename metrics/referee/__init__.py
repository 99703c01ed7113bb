"""REFEREE (Huang & Kochmar, 2024): a reference-free simplification metric, free of Django.

An encoder reads "complex [SEP] output"; one linear head per supervision signal sits on the two
sides' pooled states and their difference. Trained in three stages (:func:`train`), served by
:class:`RefereeScorer` with the human head.

The names below are loaded on first use (PEP 562): importing ``metrics.referee`` or its ``config`` and
``kind`` modules does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics.learned.lazy import lazy_exports

if TYPE_CHECKING:
    from metrics.referee.config import (
        ALL_SIGNALS,
        HUMAN_SIGNAL,
        REFERENCE_BASED_SIGNALS,
        REFERENCE_FREE_SIGNALS,
        RefereeConfig,
    )
    from metrics.referee.model import RefereeModel, masked_multihead_loss
    from metrics.referee.scorer import RefereeScorer
    from metrics.referee.training import train

_HOMES = {
    "metrics.referee.config": ("ALL_SIGNALS", "HUMAN_SIGNAL", "REFERENCE_BASED_SIGNALS", "REFERENCE_FREE_SIGNALS",
                               "RefereeConfig"),
    "metrics.referee.model": ("RefereeModel", "masked_multihead_loss"),
    "metrics.referee.scorer": ("RefereeScorer",),
    "metrics.referee.training": ("train",),
}
__all__ = [
    "ALL_SIGNALS", "HUMAN_SIGNAL", "REFERENCE_BASED_SIGNALS", "REFERENCE_FREE_SIGNALS", "RefereeConfig",
    "RefereeModel", "RefereeScorer", "masked_multihead_loss", "train",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
