"""LENS's progress events, results and callbacks are the family's (:mod:`metrics.learned.callbacks`)."""

from metrics.learned.callbacks import (
    Callback,
    CancelCallback,
    EarlyStopping,
    HeldoutMetrics,
    ProgressCallback,
    ProgressEvent,
    TrainingCancelled,
    TrainResult,
)

__all__ = [
    "Callback",
    "CancelCallback",
    "EarlyStopping",
    "HeldoutMetrics",
    "ProgressCallback",
    "ProgressEvent",
    "TrainResult",
    "TrainingCancelled",
]
