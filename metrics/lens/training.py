"""LENS training: a :class:`Trainer` (training step, held-out evaluation, best checkpoint) on the family's
training skeleton (:func:`metrics.learned.training.fit_epochs`).

The trainer knows nothing of who watches it: progress events, cancellation and early stopping are
:class:`Callback` s (the Celery service passes one that stores and broadcasts events and one that polls for a
cancel request).

Batching: a step holds ``batch_size`` rated samples taken from a single source (a source's outputs are
shuffled and cut into chunks of ``batch_size``; the chunks of all sources are then shuffled), so the complex
sentence and the references are encoded once per step and shared by up to ``batch_size`` outputs. Every
distinct text of a step is encoded once. While the encoder is frozen (the first ``freeze_epochs`` epochs, or
every epoch by default), the per-layer mean-pooled states of every distinct text are computed once and
cached: mixing layers commutes with mean pooling, so the layer mix and the head still train on the cache.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import torch
from torch import Tensor

from annotation.rules import UNCATEGORISED
from evaluation.stats.correlation import pearson
from metrics.learned.callbacks import (
    Callback,
    CancelCallback,
    HeldoutMetrics,
    ProgressCallback,
    ProgressEvent,
    TrainResult,
)
from metrics.learned.config import Json
from metrics.learned.training import (
    BEST_DIR,
    Epoch,
    EpochLoop,
    fit_epochs,
    make_batches,
    seed_everything,
)
from metrics.lens.checkpoint import save_checkpoint
from metrics.lens.config import TrainConfig
from metrics.lens.encoders import encoder_class
from metrics.lens.inference import (
    autocast,
    autocast_dtype,
    pooled_in_batches,
    predict_batch,
    resolve_device,
)
from metrics.lens.loss import max_over_references, pairwise_rank_loss, topk_loss
from metrics.lens.model import IndexedBatch, LensModel
from metrics.lens.types import Sample

"""Category given to samples without one for the tau-like: they are compared with each other only and
count in tau "all" (and under this key), never in the paraphrase/split/deletion coefficients."""

__all__ = ["FeatureCache", "Trainer", "evaluate", "heldout_tau", "train"]


def _as_batch(samples: Sequence[Sample]) -> IndexedBatch:
    return IndexedBatch.build([(s.complex, s.output, s.references) for s in samples])


def _check_samples(samples: Sequence[Sample], name: str) -> None:
    for sample in samples:
        if not sample.references:
            raise ValueError(f"{name} sample {sample.source_id}/{sample.output_id} has no reference")
        if not math.isfinite(sample.z):
            raise ValueError(f"{name} sample {sample.source_id}/{sample.output_id} has a non-finite z")


def heldout_tau(samples: Sequence[Sample], metric: Sequence[float], threshold: float) -> dict[str, float | None]:
    """Kendall tau-like of ``metric`` against the samples' raw ratings (see ``UNCATEGORISED``)."""
    from evaluation.stats.correlation import TauItem, kendall_tau_like

    items = [
        TauItem(
            source=s.source_id,
            output=s.output_id,
            category=s.category or UNCATEGORISED,
            metric=float(m),
            ratings=s.ratings,
        )
        for s, m in zip(samples, metric, strict=True)
    ]
    return dict(kendall_tau_like(items, threshold=threshold).value)


class FeatureCache:
    """Per-layer mean-pooled states ``[N, L, H]`` of texts, computed once with a frozen encoder.

    A run builds its own (every distinct training and held-out text); an experiment that trains several
    heads on one encoder builds one, possibly saves it (:meth:`save`/:meth:`load`), and passes it to every
    :class:`Trainer` (``features=``): texts it lacks are encoded and added on first need.
    """

    def __init__(self, texts: Sequence[str], states: Tensor) -> None:
        if len(texts) != states.shape[0]:
            raise ValueError(f"{len(texts)} texts but {states.shape[0]} rows of states")
        self.row = {text: i for i, text in enumerate(texts)}
        self.states = states

    @classmethod
    def build(cls, model: LensModel, texts: Sequence[str], config: TrainConfig) -> FeatureCache:
        distinct = list(dict.fromkeys(texts))
        return cls(distinct, pooled_in_batches(model, distinct, config.encode_batch_size, config.precision))

    def extend(self, model: LensModel, texts: Sequence[str], config: TrainConfig) -> None:
        """Encode and add the texts not cached yet."""
        missing = [t for t in dict.fromkeys(texts) if t not in self.row]
        if not missing:
            return
        states = pooled_in_batches(model, missing, config.encode_batch_size, config.precision)
        for text in missing:
            self.row[text] = len(self.row)
        self.states = torch.cat([self.states, states.to(self.states.device, self.states.dtype)])

    def __contains__(self, text: object) -> bool:
        return text in self.row

    def __call__(self, texts: Sequence[str]) -> Tensor:
        return self.states[[self.row[t] for t in texts]].float()

    def save(self, path: Path) -> None:
        torch.save({"texts": list(self.row), "states": self.states.cpu()}, path)

    @classmethod
    def load(cls, path: Path) -> FeatureCache:
        data = torch.load(path, map_location="cpu", weights_only=True)
        return cls(list(data["texts"]), data["states"])


def evaluate(
    model: LensModel,
    samples: Sequence[Sample],
    config: TrainConfig,
    lookup: Callable[[Sequence[str]], Tensor] | None = None,
) -> tuple[HeldoutMetrics, list[float]]:
    """Held-out loss, Pearson and tau-like of max-over-references predictions."""
    if not samples:
        return HeldoutMetrics(tau={}, pearson=None, loss=None), []
    batch = _as_batch(samples)
    matrix = predict_batch(
        model, batch, encode_batch_size=config.encode_batch_size, precision=config.precision, lookup=lookup
    )
    target = torch.tensor([s.z for s in samples], dtype=torch.float32)
    loss = float(topk_loss(matrix, target, batch.ref_mask, config.k))
    best = max_over_references(matrix, batch.ref_mask).tolist()
    tau = heldout_tau(samples, best, config.tau_threshold) if config.select_by == "tau" else {}
    return HeldoutMetrics(tau=tau, pearson=pearson(best, [s.z for s in samples]), loss=loss), best


# --- the trainer -------------------------------------------------------------------------------------------


class Trainer:
    """LENS training in steps: :meth:`training_step`, :meth:`evaluate` on the held-out set, :meth:`checkpoint`.

    :meth:`fit` runs the epochs on the family's skeleton; progress, cancellation and early stopping are
    :class:`Callback` s (an ``EarlyStopping`` is added from ``config.patience`` unless one is given).

    Args:
        config: Hyper-parameters and architecture.
        out_dir: Directory receiving ``best/`` (the selected checkpoint).
        callbacks: Progress reporting, cancellation, early stopping.
        features: A feature cache shared by several runs on one encoder (see :class:`FeatureCache`).
    """

    def __init__(
        self,
        config: TrainConfig,
        *,
        out_dir: Path,
        callbacks: Sequence[Callback] = (),
        features: FeatureCache | None = None,
    ) -> None:
        self.config = config
        self._shared_features = features
        self.out_dir = Path(out_dir)
        self.best_dir = self.out_dir / BEST_DIR
        self.loop = self._new_loop(callbacks)
        self.callbacks = self.loop.callbacks
        self.device = resolve_device(config.device)
        self.saved = False
        self._cache: FeatureCache | None = None
        self._pending: dict[str, Tensor] | None = None
        self._pending_extra: dict[str, Json] | None = None
        self._best_head: dict[str, Tensor] | None = None

    def _new_loop(self, callbacks: Sequence[Callback], total_steps: int = 0) -> EpochLoop:
        return EpochLoop(list(callbacks), total_steps=total_steps, select_by=self.config.select_by,
                         patience=self.config.patience, progress_every=self.config.progress_every,
                         on_cancel=self._on_cancel)

    def fit(self, train: Sequence[Sample], heldout: Sequence[Sample]) -> TrainResult:
        """Train with the top-k loss and keep the best held-out checkpoint.

        Args:
            train: Training samples (each needs at least one reference).
            heldout: Samples for checkpoint selection (tau_all, or loss when tau is undefined); may be empty,
                in which case the last epoch is kept.

        Returns:
            The selected checkpoint, its epoch and held-out results, timings and the per-epoch history.

        Raises:
            TrainingCancelled: a callback asked to cancel.
        """
        if not train:
            raise ValueError("no training samples")
        _check_samples(train, "train")
        _check_samples(heldout, "heldout")
        keep = self.config.heldout_references
        if keep is not None:
            heldout = [replace(s, references=s.references[:keep]) for s in heldout]
        started = time.perf_counter()
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._build()
        rng = random.Random(self.config.seed)
        steps_per_epoch = len(make_batches(train, self.config.batch_size, random.Random(0)))
        self.loop = self._new_loop(self.callbacks, steps_per_epoch * self.config.epochs)
        self.callbacks = self.loop.callbacks
        self._cache = None
        fit_epochs(self.loop, self.config.epochs, Epoch(
            train=lambda: self._train_epoch(train, heldout, rng),
            evaluate=lambda: self.evaluate(heldout),
            keep_best=self.checkpoint,
        ))
        self._flush_best()
        assert self.loop.best_metrics is not None
        return TrainResult(
            best_checkpoint=self.best_dir,
            best_epoch=self.loop.best_epoch,
            heldout=self.loop.best_metrics.to_dict(),
            train_seconds=time.perf_counter() - started,
            device=str(self.device),
            history=self.loop.history,
        )

    def _build(self) -> None:
        """Seed, then the model, the optimiser and the loss scaler (in this order, for reproducibility)."""
        config = self.config
        seed_everything(config.seed)
        encoder = encoder_class(config.model.encoder_type).from_pretrained(
            config.model.encoder, max_length=config.model.max_length
        )
        self.model = LensModel(config.model, encoder).to(self.device)
        self.optimizer = torch.optim.AdamW(
            [
                {"params": list(self.model.encoder.parameters()), "lr": config.encoder_lr},
                {"params": self.model.head_parameters(), "lr": config.head_lr},
            ],
            weight_decay=config.weight_decay,
        )
        # fp16 autocast needs loss scaling; bf16 and fp32 do not.
        fp16 = autocast_dtype(self.device, config.precision) == torch.float16
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=fp16)

    def _train_epoch(self, train: Sequence[Sample], heldout: Sequence[Sample], rng: random.Random) -> dict[str, Json]:
        frozen = self._prepare_encoder(train, heldout)
        for samples in make_batches(train, self.config.batch_size, rng):
            self.loop.check_cancel()
            self.loop.step_done(self.training_step(samples))
        return {"frozen_encoder": frozen}

    def _prepare_encoder(self, train: Sequence[Sample], heldout: Sequence[Sample]) -> bool:
        """Freeze the encoder for the first ``freeze_epochs`` epochs (caching its pooled states once), then
        train it; returns whether it is frozen in this epoch."""
        freeze = self.config.freeze_epochs
        frozen = freeze is None or self.loop.epoch <= freeze
        self.model.encoder.set_trainable(not frozen, self.config.trainable_layers)
        if frozen and self._cache is None:
            self.loop.check_cancel()
            texts = [t for s in (*train, *heldout) for t in (s.complex, s.output, *s.references)]
            self.model.eval()
            if self._shared_features is not None:
                self._shared_features.extend(self.model, texts, self.config)
                self._cache = self._shared_features
            else:
                self._cache = FeatureCache.build(self.model, texts, self.config)
        elif not frozen:
            self._flush_best()  # a frozen-epoch best needs the encoder as it is now, before fine-tuning
            self._cache = None
        self.model.train()
        if frozen:
            self.model.encoder.eval()
        return frozen

    def training_step(self, samples: Sequence[Sample]) -> float:
        """One optimisation step on one single-source batch; returns its loss."""
        config, model, device = self.config, self.model, self.device
        batch = _as_batch(samples).to(device)
        target = torch.tensor([s.z for s in samples], dtype=torch.float32, device=device)
        with autocast(device, config.precision):
            cache = self._cache
            pooled = cache(batch.texts).to(device) if cache is not None else model.pooled_layers(batch.texts)
            predictions = model(model.mix(pooled), batch).float()
        loss = topk_loss(predictions, target, batch.ref_mask, config.k)
        if config.rank_weight:
            scores = max_over_references(predictions, batch.ref_mask)
            loss = loss + config.rank_weight * pairwise_rank_loss(scores, target)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()  # type: ignore[no-untyped-call]
        if config.grad_clip is not None:
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return float(loss.detach())

    def evaluate(self, heldout: Sequence[Sample]) -> HeldoutMetrics:
        """Held-out loss, Pearson and tau-like of the current model (empty metrics without held-out samples)."""
        metrics, _ = evaluate(self.model, heldout, self.config, lookup=self._cache)
        return metrics

    def checkpoint(self, metrics: HeldoutMetrics) -> None:
        """Keep the current model as the best one, with its epoch and held-out results.

        While the encoder is frozen only the layer mix and head change, so they are kept in memory and
        written to ``best/`` once (at the end, before fine-tuning starts, or on cancellation): a large
        encoder is not rewritten after every improving epoch. A fine-tuned model is written at once.
        """
        extra: dict[str, Json] = {"epoch": self.loop.epoch, "heldout": metrics.to_dict()}
        if self._cache is not None:
            self._pending = {
                name: value.detach().clone() for name, value in self.model.state_dict().items()
                if not name.startswith("encoder.")
            }
            self._pending_extra = extra
            return
        self._pending = self._pending_extra = self._best_head = None
        save_checkpoint(self.model, self.best_dir, train_config=self.config, extra=extra)
        self.saved = True

    def _flush_best(self) -> None:
        """Write the best model kept in memory (if any) to ``best/``; the current weights come back after."""
        if self._pending is None or self._pending_extra is None:
            return
        current = {name: value.detach().clone() for name, value in self.model.state_dict().items()
                   if name in self._pending}
        self.model.load_state_dict(self._pending, strict=False)
        save_checkpoint(self.model, self.best_dir, train_config=self.config, extra=self._pending_extra)
        self.model.load_state_dict(current, strict=False)
        self._best_head = self._pending
        self._pending = self._pending_extra = None
        self.saved = True

    def restore_best(self) -> None:
        """Load the best head and layer mix kept in memory into the model (no-op when none is pending)."""
        best = self._pending if self._pending is not None else self._best_head
        if best is not None:
            self.model.load_state_dict(best, strict=False)

    def _on_cancel(self) -> Path | None:
        self._flush_best()
        return self.best_dir if self.saved else None


def train(
    config: TrainConfig,
    train: Sequence[Sample],
    heldout: Sequence[Sample],
    *,
    out_dir: Path,
    callbacks: Sequence[Callback] = (),
    on_progress: Callable[[ProgressEvent], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TrainResult:
    """Train LENS with the top-k loss and keep the best held-out checkpoint (see :class:`Trainer`).

    Args:
        config: Hyper-parameters and architecture.
        train: Training samples (each needs at least one reference).
        heldout: Samples for checkpoint selection; may be empty, in which case the last epoch is kept.
        out_dir: Directory receiving ``best/`` (the selected checkpoint).
        callbacks: Progress, cancellation and early-stopping hooks.
        on_progress: Shorthand for a :class:`ProgressCallback`.
        should_stop: Shorthand for a :class:`CancelCallback`: True raises ``TrainingCancelled``.

    Returns:
        The selected checkpoint, its epoch and held-out results, timings and the per-epoch history.
    """
    all_callbacks = list(callbacks)
    if on_progress is not None:
        all_callbacks.append(ProgressCallback(on_progress))
    if should_stop is not None:
        all_callbacks.append(CancelCallback(should_stop))
    return Trainer(config, out_dir=out_dir, callbacks=all_callbacks).fit(train, heldout)
