"""LENS (Maddela et al., ACL 2023): a learnable metric for text simplification, free of Django.

Train with :class:`Trainer` (or :func:`train`) on :class:`Sample` lists, serve with :class:`LensScorer`.

The names below are loaded on first use (PEP 562): importing ``metrics.lens`` or one of its light
modules (``config``, ``types``) does not import torch; touching ``LensScorer``, ``train``... does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics.learned.lazy import lazy_exports

if TYPE_CHECKING:
    from metrics.lens.config import DEFAULT_ENCODER, LensConfig, TrainConfig
    from metrics.lens.loss import max_over_references, topk_loss
    from metrics.lens.scorer import InputTooLongError, LensScorer
    from metrics.lens.training import Trainer, train
    from metrics.lens.types import Prediction, Sample, ScoreInput, z_to_score

_HOMES = {
    "metrics.lens.config": ("DEFAULT_ENCODER", "LensConfig", "TrainConfig"),
    "metrics.lens.loss": ("max_over_references", "topk_loss"),
    "metrics.lens.scorer": ("InputTooLongError", "LensScorer"),
    "metrics.lens.training": ("Trainer", "train"),
    "metrics.lens.types": ("Prediction", "Sample", "ScoreInput", "z_to_score"),
}

__all__ = [
    "DEFAULT_ENCODER", "InputTooLongError", "LensConfig", "LensScorer", "Prediction", "Sample", "ScoreInput",
    "TrainConfig", "Trainer", "max_over_references", "topk_loss", "train", "z_to_score",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
