"""REFEREE (Huang & Kochmar, 2024): a reference-free simplification metric, free of Django.

An encoder reads "complex [SEP] output"; one linear head per supervision signal sits on the two
sides' pooled states and their difference. Trained in three stages (:func:`train`), served by
:class:`RefereeScorer` with the human head.

The names below are loaded on first use (PEP 562): importing ``metrics.referee`` or its ``config`` and
``kind`` modules does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

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
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = [
    "ALL_SIGNALS", "HUMAN_SIGNAL", "REFERENCE_BASED_SIGNALS", "REFERENCE_FREE_SIGNALS", "RefereeConfig",
    "RefereeModel", "RefereeScorer", "masked_multihead_loss", "train",
]


def __getattr__(name: str) -> object:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'metrics.referee' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
