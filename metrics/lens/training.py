"""Training loop with source-grouped batches, a frozen-encoder cache, held-out selection and callbacks.

Batching: a step holds ``batch_size`` rated samples taken from a single source (a source's outputs are
shuffled and cut into chunks of ``batch_size``; the chunks of all sources are then shuffled), so the complex
sentence and the references are encoded once per step and shared by up to ``batch_size`` outputs. Every
distinct text of a step is encoded once. While the encoder is frozen (the first ``freeze_epochs`` epochs),
the per-layer mean-pooled states of every distinct text are computed once and cached: mixing layers
commutes with mean pooling, so the layer mix and the head still train on the cache.
"""

from __future__ import annotations

import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor

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
from metrics.lens.loss import max_over_references, topk_loss
from metrics.lens.model import IndexedBatch, LensModel
from metrics.lens.types import Sample

UNCATEGORISED = "uncategorised"
"""Category given to samples without one for the tau-like: they are compared with each other only and
count in tau "all" (and under this key), never in the paraphrase/split/deletion coefficients."""

BEST_DIR = "best"


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


@dataclass
class TrainResult:
    """Outcome of ``train``: the selected checkpoint and what led to it."""

    best_checkpoint: Path
    best_epoch: int
    heldout: dict[str, Any]
    train_seconds: float
    device: str
    history: list[dict[str, Any]] = field(default_factory=list)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def make_batches(samples: Sequence[Sample], batch_size: int, rng: random.Random) -> list[list[Sample]]:
    """Shuffled single-source batches of at most ``batch_size`` samples (see the module docstring)."""
    by_source: dict[str, list[Sample]] = defaultdict(list)
    for sample in samples:
        by_source[sample.source_id].append(sample)
    batches: list[list[Sample]] = []
    for source in sorted(by_source):
        group = list(by_source[source])
        rng.shuffle(group)
        batches.extend(group[i : i + batch_size] for i in range(0, len(group), batch_size))
    rng.shuffle(batches)
    return batches


def _as_batch(samples: Sequence[Sample]) -> IndexedBatch:
    return IndexedBatch.build([(s.complex, s.output, s.references) for s in samples])


def _check_samples(samples: Sequence[Sample], name: str) -> None:
    for sample in samples:
        if not sample.references:
            raise ValueError(f"{name} sample {sample.source_id}/{sample.output_id} has no reference")
        if not math.isfinite(sample.z):
            raise ValueError(f"{name} sample {sample.source_id}/{sample.output_id} has a non-finite z")


def _pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) < 2:
        return None
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.std() == 0 or b.std() == 0:
        return None
    return float(np.corrcoef(a, b)[0, 1])


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


class _PooledCache:
    """Per-layer pooled states of a fixed set of texts, computed once with the frozen encoder."""

    def __init__(self, model: LensModel, texts: Sequence[str], config: TrainConfig) -> None:
        distinct = list(dict.fromkeys(texts))
        self.row = {text: i for i, text in enumerate(distinct)}
        self.states = pooled_in_batches(model, distinct, config.encode_batch_size, config.precision)

    def __call__(self, texts: Sequence[str]) -> Tensor:
        return self.states[[self.row[t] for t in texts]]


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
    return HeldoutMetrics(tau=tau, pearson=_pearson(best, [s.z for s in samples]), loss=loss), best


def _selection_key(metrics: HeldoutMetrics, select_by: str) -> tuple[int, float] | None:
    """Larger is better; tau beats loss when defined. None when nothing can rank the epoch."""
    tau_all = metrics.tau.get("all")
    if select_by == "tau" and tau_all is not None and math.isfinite(tau_all):
        return (1, tau_all)
    if metrics.loss is not None and math.isfinite(metrics.loss):
        return (0, -metrics.loss)
    return None


def _set_encoder_trainable(model: LensModel, trainable: bool) -> None:
    for parameter in model.encoder.parameters():
        parameter.requires_grad_(trainable)


def train(
    config: TrainConfig,
    train: Sequence[Sample],
    heldout: Sequence[Sample],
    *,
    out_dir: Path,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TrainResult:
    """Train LENS with the top-k loss and keep the best held-out checkpoint.

    Args:
        config: Hyper-parameters and architecture.
        train: Training samples (each needs at least one reference).
        heldout: Samples for checkpoint selection (tau_all, or loss when tau is undefined); may be empty,
            in which case the last epoch is kept.
        out_dir: Directory receiving ``best/`` (the selected checkpoint).
        on_progress: Called with step and epoch events.
        should_stop: Polled before every step and evaluation; True raises ``TrainingCancelled``.

    Returns:
        The selected checkpoint, its epoch and held-out results, timings and the per-epoch history.
    """
    if not train:
        raise ValueError("no training samples")
    _check_samples(train, "train")
    _check_samples(heldout, "heldout")
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    device = resolve_device(config.device)
    seed_everything(config.seed)

    encoder = encoder_class(config.model.encoder_type).from_pretrained(
        config.model.encoder, max_length=config.model.max_length
    )
    model = LensModel(config.model, encoder).to(device)
    optimizer = torch.optim.AdamW(
        [
            {"params": list(model.encoder.parameters()), "lr": config.encoder_lr},
            {"params": model.head_parameters(), "lr": config.head_lr},
        ],
        weight_decay=config.weight_decay,
    )
    # fp16 autocast needs loss scaling; bf16 and fp32 do not.
    scaler = torch.amp.GradScaler(device.type, enabled=autocast_dtype(device, config.precision) == torch.float16)
    rng = random.Random(config.seed)
    steps_per_epoch = len(make_batches(train, config.batch_size, random.Random(0)))
    total_steps = steps_per_epoch * config.epochs
    best_dir = out_dir / BEST_DIR
    best_key: tuple[int, float] | None = None
    best_epoch = 0
    best_metrics: HeldoutMetrics | None = None
    saved = False
    history: list[dict[str, Any]] = []
    cache: _PooledCache | None = None
    stale_epochs = 0
    step = 0

    def check_stop(epoch: int) -> None:
        if should_stop is not None and should_stop():
            raise TrainingCancelled(epoch=epoch, step=step, best_checkpoint=best_dir if saved else None)

    for epoch in range(1, config.epochs + 1):
        epoch_started = time.perf_counter()
        frozen = epoch <= config.freeze_epochs
        _set_encoder_trainable(model, not frozen)
        if frozen and cache is None:
            check_stop(epoch)
            all_texts = [t for s in (*train, *heldout) for t in (s.complex, s.output, *s.references)]
            model.eval()
            cache = _PooledCache(model, all_texts, config)
        elif not frozen:
            cache = None
        model.train()
        if frozen:
            model.encoder.eval()
        losses: list[float] = []
        for samples in make_batches(train, config.batch_size, rng):
            check_stop(epoch)
            batch = _as_batch(samples).to(device)
            target = torch.tensor([s.z for s in samples], dtype=torch.float32, device=device)
            with autocast(device, config.precision):
                pooled = cache(batch.texts).to(device) if cache is not None else model.pooled_layers(batch.texts)
                predictions = model(model.mix(pooled), batch)
            loss = topk_loss(predictions.float(), target, batch.ref_mask, config.k)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()  # type: ignore[no-untyped-call]
            if config.grad_clip is not None:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            scaler.step(optimizer)
            scaler.update()
            step += 1
            losses.append(float(loss.detach()))
            if on_progress is not None and step % config.progress_every == 0:
                on_progress(ProgressEvent("step", epoch, step, total_steps, loss=float(np.mean(losses))))
        check_stop(epoch)
        metrics, _ = evaluate(model, heldout, config, lookup=cache)
        key = _selection_key(metrics, config.select_by)
        improved = (key is not None and (best_key is None or key > best_key)) or (key is None and best_key is None)
        if improved:
            best_key, best_epoch, best_metrics = key, epoch, metrics
            save_checkpoint(
                model,
                best_dir,
                train_config=config,
                extra={"epoch": epoch, "heldout": metrics.to_dict()},
            )
            saved = True
            stale_epochs = 0
        else:
            stale_epochs += 1
        train_loss = float(np.mean(losses)) if losses else float("nan")
        history.append(
            {
                "epoch": epoch,
                "train_loss": train_loss,
                "heldout": metrics.to_dict(),
                "frozen_encoder": frozen,
                "seconds": time.perf_counter() - epoch_started,
                "best": improved,
            }
        )
        if on_progress is not None:
            on_progress(ProgressEvent("epoch", epoch, step, total_steps, train_loss, metrics, improved))
        if config.patience is not None and stale_epochs >= config.patience:
            break

    assert best_metrics is not None
    return TrainResult(
        best_checkpoint=best_dir,
        best_epoch=best_epoch,
        heldout=best_metrics.to_dict(),
        train_seconds=time.perf_counter() - started,
        device=str(device),
        history=history,
    )
