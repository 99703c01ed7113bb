"""What every learned kind's training reports and obeys: progress events, results and callbacks, free of torch.

The Django layer subclasses :class:`Callback` (storing and broadcasting events, polling for a cancel request)
and catches :class:`TrainingCancelled` without importing torch at start-up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal


class TrainingCancelled(Exception):
    """Raised when ``should_stop()`` returned True; ``best_checkpoint`` is the best one saved so far."""

    def __init__(self, *, epoch: int, step: int, best_checkpoint: Path | None) -> None:
        super().__init__(f"training cancelled at epoch {epoch}, step {step}")
        self.epoch = epoch
        self.step = step
        self.best_checkpoint = best_checkpoint


@dataclass(frozen=True)
class HeldoutMetrics:
    """Held-out results of one epoch: tau-like per key ("all", "paraphrase", ...), Pearson with z, loss."""

    tau: dict[str, float | None]
    pearson: float | None
    loss: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"tau": dict(self.tau), "pearson": self.pearson, "loss": self.loss}


@dataclass(frozen=True)
class ProgressEvent:
    """Training progress: ``kind="step"`` every ``progress_every`` steps, ``kind="epoch"`` at epoch end.

    ``loss`` is the mean training loss of the epoch so far; ``heldout`` is set on epoch events only.
    """

    kind: Literal["step", "epoch"]
    epoch: int
    step: int
    total_steps: int
    loss: float
    heldout: HeldoutMetrics | None = None
    is_best: bool = False
    label: str = ""
    """What the epoch was, where an epoch is not a pass over the data (the blend's cross-validated settings,
    its cross-fitting trainings and its final fit); empty otherwise."""


@dataclass
class TrainResult:
    """Outcome of ``train``: the selected checkpoint and what led to it."""

    best_checkpoint: Path
    best_epoch: int
    heldout: dict[str, Any]
    train_seconds: float
    device: str
    history: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What the run could not do as configured (e.g. a supervision signal it had to mask); the version
    records them beside its data warnings."""


# --- callbacks ---------------------------------------------------------------------------------------------


class Callback:
    """Hooks a training run calls (:class:`metrics.learned.training.EpochLoop`); each does nothing unless
    overridden."""

    def on_progress(self, event: ProgressEvent) -> None:
        """A step event every ``progress_every`` steps, and one epoch event at the end of every epoch."""

    def should_cancel(self) -> bool:
        """Polled before every step and every evaluation (and before caching); True cancels the run."""
        return False

    def should_stop(self) -> bool:
        """Asked after each epoch event; True ends training normally, keeping the best checkpoint."""
        return False


class ProgressCallback(Callback):
    """Passes every progress event to a function."""

    def __init__(self, function: Callable[[ProgressEvent], None]) -> None:
        self.function = function

    def on_progress(self, event: ProgressEvent) -> None:
        self.function(event)


class CancelCallback(Callback):
    """Cancels the run as soon as ``poll()`` returns True (a cancel button, a shutdown)."""

    def __init__(self, poll: Callable[[], bool]) -> None:
        self.poll = poll

    def should_cancel(self) -> bool:
        return self.poll()


class EarlyStopping(Callback):
    """Stops after ``patience`` epochs in a row without a better held-out result."""

    def __init__(self, patience: int) -> None:
        self.patience = patience
        self.stale_epochs = 0

    def on_progress(self, event: ProgressEvent) -> None:
        if event.kind == "epoch":
            self.stale_epochs = 0 if event.is_best else self.stale_epochs + 1

    def should_stop(self) -> bool:
        return self.stale_epochs >= self.patience

    def reset(self) -> None:
        """Start counting again (a run that trains several models one after the other, e.g. SIERA's seeds)."""
        self.stale_epochs = 0


class CancelOf(Callback):
    """Passes on the cancellation of other callbacks only: a nested run (one a kind trains inside its own, e.g.
    the blend's cross-fitting) stops when its parent is cancelled, and its progress is not the parent's."""

    def __init__(self, callbacks: list[Callback]) -> None:
        self.callbacks = list(callbacks)

    def should_cancel(self) -> bool:
        return any(callback.should_cancel() for callback in self.callbacks)
