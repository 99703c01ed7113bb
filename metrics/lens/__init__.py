"""LENS (Maddela et al., ACL 2023): a learnable metric for text simplification, free of Django.

Train with :class:`Trainer` (or :func:`train`) on :class:`Sample` lists, serve with :class:`LensScorer`.
"""

from metrics.lens.config import DEFAULT_ENCODER, LensConfig, TrainConfig
from metrics.lens.loss import max_over_references, topk_loss
from metrics.lens.scorer import InputTooLongError, LensScorer
from metrics.lens.training import (
    Callback,
    CancelCallback,
    EarlyStopping,
    HeldoutMetrics,
    ProgressCallback,
    ProgressEvent,
    Trainer,
    TrainingCancelled,
    TrainResult,
    train,
)
from metrics.lens.types import Prediction, Sample, ScoreInput, z_to_score

__all__ = [
    "DEFAULT_ENCODER",
    "Callback",
    "CancelCallback",
    "EarlyStopping",
    "HeldoutMetrics",
    "InputTooLongError",
    "LensConfig",
    "LensScorer",
    "Prediction",
    "ProgressCallback",
    "ProgressEvent",
    "Sample",
    "ScoreInput",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "TrainingCancelled",
    "max_over_references",
    "topk_loss",
    "train",
    "z_to_score",
]
