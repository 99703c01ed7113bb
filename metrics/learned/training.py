"""The training skeleton every learned kind runs: epochs, one best-epoch rule, patience, progress and cancel.

A kind supplies what differs (its model, data and loss) as the functions of one epoch; :func:`fit_epochs`
runs them in this order each epoch: train (the kind reports each step with :meth:`EpochLoop.step_done` and
polls :meth:`EpochLoop.check_cancel` before it), evaluate on the held-out set, select (one rule for every
kind: :func:`selection_key`, :func:`improves_on`), keep the best, record and emit the epoch event, then stop
early when the patience runs out or a callback asks. Nothing here draws random numbers, so a kind's seeded
run draws exactly what it draws itself.

Importing this module does not import torch (:func:`seed_everything` does, when called).
"""

from __future__ import annotations

import math
import operator
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from metrics.learned.callbacks import Callback, EarlyStopping, HeldoutMetrics, ProgressEvent, TrainingCancelled
from metrics.learned.config import Json

T = TypeVar("T")
SelectBy = str
"""``"tau"`` (held-out tau_all, the held-out loss when tau is undefined) or ``"loss"`` (the held-out loss)."""
SelectionKey = tuple[int, float]
BEST_DIR = "best"
"""Where a run writes the checkpoint it selects, inside its output directory."""


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and torch's generators."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def make_batches(
    samples: Sequence[T], batch_size: int, rng: random.Random, source: Callable[[T], str] | None = None,
) -> list[list[T]]:
    """Shuffled single-source batches of at most ``batch_size`` samples: a source's items are shuffled and cut
    into chunks, then the chunks of all sources are shuffled. ``source`` names an item's source (default: its
    ``source_id``)."""
    key: Callable[[T], str] = source or operator.attrgetter("source_id")
    by_source: dict[str, list[T]] = defaultdict(list)
    for sample in samples:
        by_source[key(sample)].append(sample)
    batches: list[list[T]] = []
    for name in sorted(by_source):
        group = list(by_source[name])
        rng.shuffle(group)
        batches.extend(group[i : i + batch_size] for i in range(0, len(group), batch_size))
    rng.shuffle(batches)
    return batches


def chunks(items: Sequence[T], size: int, rng: random.Random | None = None) -> list[list[T]]:
    """``items`` in chunks of ``size``, shuffled first with ``rng`` when given."""
    order = list(items)
    if rng is not None:
        rng.shuffle(order)
    return [order[i:i + size] for i in range(0, len(order), size)]


def selection_key(metrics: HeldoutMetrics, select_by: SelectBy) -> SelectionKey | None:
    """Larger is better; tau beats loss when defined. None when nothing can rank the epoch."""
    tau_all = metrics.tau.get("all")
    if select_by == "tau" and tau_all is not None and math.isfinite(tau_all):
        return (1, tau_all)
    if metrics.loss is not None and math.isfinite(metrics.loss):
        return (0, -metrics.loss)
    return None


def improves_on(key: SelectionKey | None, best_key: SelectionKey | None) -> bool:
    """Whether an epoch with ``key`` replaces the best so far (``best_key`` None: none ranked yet).

    An epoch nothing can rank (no held-out samples, or none countable) wins only while no epoch could be
    ranked, so without held-out samples the last epoch is kept.
    """
    return best_key is None or (key is not None and key > best_key)


@dataclass
class EpochLoop:
    """Where a run is (epoch, step, the best epoch so far, the history) and what it tells its callbacks.

    Args:
        callbacks: Progress, cancellation and early-stopping hooks. With ``patience``, an
            :class:`EarlyStopping` is added unless one is given.
        total_steps: Steps of the whole run (for progress bars).
        select_by: The selection rule's ``select_by`` (see :func:`selection_key`).
        patience: Stop after this many epochs without a better held-out result (None: never early).
        progress_every: Emit a step event every this many steps.
        on_cancel: Called before :class:`TrainingCancelled` is raised; returns the best checkpoint written
            so far (None: none).
    """

    callbacks: list[Callback]
    total_steps: int = 0
    select_by: SelectBy = "tau"
    patience: int | None = None
    progress_every: int = 10
    on_cancel: Callable[[], Path | None] = lambda: None
    epoch: int = 0
    step: int = 0
    best_key: SelectionKey | None = None
    best_epoch: int = 0
    best_metrics: HeldoutMetrics | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    _losses: list[float] = field(default_factory=list)
    _started: float = 0.0

    def __post_init__(self) -> None:
        self.callbacks = list(self.callbacks)
        if self.patience is not None and not any(isinstance(c, EarlyStopping) for c in self.callbacks):
            self.callbacks.append(EarlyStopping(self.patience))

    def start_epoch(self) -> int:
        self.epoch += 1
        self._losses = []
        self._started = time.perf_counter()
        return self.epoch

    def check_cancel(self) -> None:
        """Raise :class:`TrainingCancelled` when a callback asks to cancel."""
        if any(callback.should_cancel() for callback in self.callbacks):
            raise TrainingCancelled(epoch=self.epoch, step=self.step, best_checkpoint=self.on_cancel())

    def step_done(self, loss: float) -> None:
        """Count one optimisation step with its loss; a step event every ``progress_every`` steps."""
        self.step += 1
        self._losses.append(loss)
        if self.step % self.progress_every == 0:
            self.emit(ProgressEvent("step", self.epoch, self.step, self.total_steps, self.train_loss))

    @property
    def train_loss(self) -> float:
        """The mean training loss of the epoch so far (NaN before its first step)."""
        return sum(self._losses) / len(self._losses) if self._losses else float("nan")

    def select(self, metrics: HeldoutMetrics) -> bool:
        """Whether this epoch beats the best so far; recorded as the best when it does."""
        key = selection_key(metrics, self.select_by)
        improved = improves_on(key, self.best_key)
        if improved:
            self.best_key, self.best_epoch, self.best_metrics = key, self.epoch, metrics
        return improved

    def new_selection(self) -> None:
        """Forget the best epoch and the patience count (a run that trains several models in turn)."""
        self.best_key, self.best_epoch, self.best_metrics = None, 0, None
        for callback in self.callbacks:
            if isinstance(callback, EarlyStopping):
                callback.reset()

    def end_epoch(self, metrics: HeldoutMetrics | None, *, is_best: bool, record: dict[str, Json],
                  label: str = "") -> None:
        """Record the epoch in the history and emit its event (``label``: what the epoch was, where it is not a
        pass over the data)."""
        train_loss = self.train_loss
        self.history.append({"epoch": self.epoch, "train_loss": train_loss,
                             "heldout": metrics.to_dict() if metrics is not None else None,
                             "best": is_best, "seconds": time.perf_counter() - self._started, **record})
        self.emit(ProgressEvent("epoch", self.epoch, self.step, self.total_steps, train_loss, heldout=metrics,
                                is_best=is_best, label=label))

    def should_stop(self) -> bool:
        return any(callback.should_stop() for callback in self.callbacks)

    def emit(self, event: ProgressEvent) -> None:
        for callback in self.callbacks:
            callback.on_progress(event)


@dataclass(frozen=True)
class Epoch:
    """What a kind does in one epoch, for :func:`fit_epochs`.

    Attributes:
        train: Runs the epoch's steps (reporting each with ``loop.step_done``); returns what to record in
            the history beside the loop's own fields.
        evaluate: The held-out results of the model now (None: this epoch is not a candidate, e.g.
            REFEREE's pre-training stages).
        keep_best: Keeps the model as the best one (writes or remembers a checkpoint).
        stops_early: Whether patience and ``should_stop`` callbacks may end these epochs.
    """

    train: Callable[[], dict[str, Json]]
    evaluate: Callable[[], HeldoutMetrics | None]
    keep_best: Callable[[HeldoutMetrics], None]
    stops_early: bool = True


def fit_epochs(loop: EpochLoop, epochs: int, epoch: Epoch) -> None:
    """Run up to ``epochs`` epochs of ``epoch`` on ``loop`` (see the module docstring)."""
    for _ in range(epochs):
        loop.start_epoch()
        record = epoch.train()
        loop.check_cancel()
        metrics = epoch.evaluate()
        improved = metrics is not None and loop.select(metrics)
        if improved:
            assert metrics is not None
            epoch.keep_best(metrics)
        loop.end_epoch(metrics, is_best=improved, record=record)
        loop.check_cancel()
        if epoch.stops_early and loop.should_stop():
            break
