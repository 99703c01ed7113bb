"""REFEREE training: synthetic pre-training (stage 1), + reference-based signals (stage 2), fine-tuning on
z-scored human ratings (stage 3); the checkpoint kept is the stage-3 epoch with the best held-out tau-like.

Progress events follow the LENS protocol (``metrics.learned``): a step event every ``progress_every``
steps and one epoch event per epoch (held-out results on stage-3 epochs), cancellation polled every step.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from metrics.learned import (
    Callback,
    HeldoutMetrics,
    ProgressEvent,
    SelectionKey,
    TrainResult,
    check_cancel,
    emit,
    improves_on,
    load_encoder,
    make_batches,
    pairwise_rank_loss,
    pearson,
    seed_everything,
    selection_key,
    should_stop,
    write_checkpoint,
)
from metrics.lens import Sample
from metrics.lens.inference import resolve_device
from metrics.referee.config import (
    HUMAN_SIGNAL,
    REFERENCE_BASED_SIGNALS,
    REFERENCE_FREE_SIGNALS,
    RefereeConfig,
)
from metrics.referee.data import (
    SignalKey,
    SyntheticExample,
    compute_signals,
    pretraining_signals,
    rated_outputs_corpus,
    standardise,
    synthetic_corpus,
)
from metrics.referee.model import RefereeModel, masked_multihead_loss

logger = logging.getLogger(__name__)

KIND = "referee"
BEST_DIR = "best"
PROGRESS_EVERY = 10


def _chunks(items: Sequence[Any], size: int, rng: random.Random | None) -> list[list[Any]]:
    order = list(items)
    if rng is not None:
        rng.shuffle(order)
    return [order[i:i + size] for i in range(0, len(order), size)]


class RefereeTrainer:
    def __init__(
        self, config: RefereeConfig, *, out_dir: Path, callbacks: Sequence[Callback] = (),
        known_signals: Mapping[SignalKey, Mapping[str, float | None]] | None = None,
    ) -> None:
        self.config = config
        self.known_signals = known_signals  # signals computed earlier (compute_signals' ``known``)
        self.out_dir = Path(out_dir)
        self.callbacks = list(callbacks)
        self.device = resolve_device(config.device)
        self.epoch = 0
        self.step = 0
        self.total_steps = 0
        self.stage_seconds: dict[str, float] = {}
        self.unavailable_signals: dict[str, str] = {}  # signal -> why it could not be computed

    # --- data ------------------------------------------------------------------------------------------

    def _cosines(self, model: RefereeModel, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        with torch.no_grad():
            for chunk in _chunks(pairs, 64, None):
                a = model.pair([c for c, _ in chunk])
                b = model.pair([o for _, o in chunk])
                out.extend(torch.nn.functional.cosine_similarity(a, b, dim=-1).tolist())
        return out

    def synthetic(
        self, model: RefereeModel, rows: Sequence[tuple[str, str, Sequence[str]]], samples: Sequence[Sample] = (),
    ) -> tuple[list[SyntheticExample], list[SyntheticExample], dict[str, tuple[float, float]]]:
        """The pre-training examples with their signals: those of the corpus ``rows``, those of the rated
        ``samples``' outputs (when stage 2 reads them), and each signal's (mean, sd) over both."""
        config = self.config
        from_corpus = synthetic_corpus(rows, config)
        from_outputs = rated_outputs_corpus(samples, config)
        model.eval()
        from_corpus, from_outputs = (
            compute_signals(
                examples, signals=pretraining_signals(config, data),
                embed_cosine=lambda pairs: self._cosines(model, pairs), bertscore=self._bertscore_options(model),
                unavailable=self.unavailable_signals, known=self.known_signals,
            ) if examples else []
            for data, examples in (("corpus", from_corpus), ("outputs", from_outputs))
        )
        return from_corpus, from_outputs, standardise([*from_corpus, *from_outputs])

    def _bertscore_options(self, model: RefereeModel) -> dict[str, object]:
        """BERTScore with REFEREE's own encoder: its usual layer when the suite knows it, else the top one."""
        from metrics.suite.base import MetricError
        from metrics.suite.bertscore import default_layer

        try:
            layer = default_layer(self.config.encoder)
        except MetricError:
            layer = model.pair.encoder.num_layers - 1
        return {"model": self.config.encoder, "layer": layer, "device": str(self.device)}

    # --- steps -----------------------------------------------------------------------------------------

    def _optimizer(self, model: RefereeModel, stage: str) -> torch.optim.Optimizer:
        model.pair.set_trainable_top_layers(self.config.trainable_layers)
        encoder_params = [p for p in model.pair.parameters() if p.requires_grad]
        groups: list[dict[str, Any]] = [{"params": model.head_parameters(), "lr": self.config.head_lr}]
        if encoder_params:
            groups.append({"params": encoder_params, "lr": self.encoder_lr(stage)})
        return torch.optim.AdamW(groups)

    def encoder_lr(self, stage: str) -> float:
        """The encoder's learning rate in ``stage`` (``"stage1"``, ``"stage2"`` or ``"stage3"``)."""
        pretrain = self.config.pretrain_encoder_lr
        return pretrain if pretrain is not None and stage != "stage3" else self.config.encoder_lr

    def _targets(
        self, rows: Sequence[dict[str, float | None]], signals: Sequence[str]
    ) -> tuple[Tensor, Tensor]:
        values = torch.full((len(rows), len(signals)), float("nan"))
        for i, row in enumerate(rows):
            for j, name in enumerate(signals):
                value = row.get(name)
                if value is not None and math.isfinite(value):
                    values[i, j] = value
        mask = ~torch.isnan(values)
        return values.to(self.device), mask.to(self.device)

    def _run_epoch(
        self, model: RefereeModel, optimizer: torch.optim.Optimizer,
        data: Sequence[tuple[tuple[str, str], dict[str, float | None]]], signals: Sequence[str],
        rng: random.Random,
    ) -> float:
        model.train()
        columns = [model.signals.index(s) for s in signals]
        ranks = self._ranks(signals)
        total, count = 0.0, 0
        for batch in self._batches(data, signals, rng):
            check_cancel(self.callbacks, epoch=self.epoch, step=self.step)
            predictions = model([pair for pair, _ in batch])[:, columns]
            targets, mask = self._targets([row for _, row in batch], signals)
            loss = masked_multihead_loss(predictions, targets, mask)
            if ranks:
                loss = loss + self.config.rank_weight * pairwise_rank_loss(predictions[:, 0], targets[:, 0])
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimizer.step()
            self.step += 1
            total, count = total + float(loss.detach()), count + 1
            if self.step % PROGRESS_EVERY == 0:
                emit(self.callbacks, ProgressEvent("step", self.epoch, self.step, self.total_steps, total / count))
        return total / max(1, count)

    def _batches(
        self, data: Sequence[tuple[tuple[str, str], dict[str, float | None]]], signals: Sequence[str],
        rng: random.Random,
    ) -> list[list[tuple[tuple[str, str], dict[str, float | None]]]]:
        """An epoch's batches: shuffled chunks, or with the ranking term in stage 3 single-source batches (the
        outputs of one complex sentence, as LENS's), so its pairs are the ones the tau-like compares."""
        if self._ranks(signals):
            return make_batches(data, self.config.batch_size, rng, source=lambda item: item[0][0])
        return _chunks(data, self.config.batch_size, rng)

    def _ranks(self, signals: Sequence[str]) -> bool:
        """Whether a stage training ``signals`` adds the ranking term: stage 3 (human ratings) with a weight."""
        return list(signals) == [HUMAN_SIGNAL] and self.config.rank_weight > 0

    def _steps(self, data: Sequence[tuple[tuple[str, str], dict[str, float | None]]], signals: Sequence[str]) -> int:
        return len(self._batches(data, signals, random.Random(0)))

    def predict(self, model: RefereeModel, pairs: Sequence[tuple[str, str]]) -> list[float]:
        model.eval()
        column = model.signals.index(HUMAN_SIGNAL)
        out: list[float] = []
        with torch.no_grad():
            for chunk in _chunks(pairs, 64, None):
                out.extend(model(chunk)[:, column].tolist())
        return out

    def evaluate(self, model: RefereeModel, heldout: Sequence[Sample]) -> HeldoutMetrics:
        if not heldout:
            return HeldoutMetrics(tau={}, pearson=None, loss=None)
        from metrics.lens.training import heldout_tau

        predicted = self.predict(model, [(s.complex, s.output) for s in heldout])
        target = [s.z for s in heldout]
        loss = sum((p - t) ** 2 for p, t in zip(predicted, target, strict=True)) / len(target)
        return HeldoutMetrics(tau=heldout_tau(heldout, predicted, self.config.tau_threshold),
                              pearson=pearson(predicted, target), loss=loss)

    # --- the three stages --------------------------------------------------------------------------------

    def fit(
        self, corpus: Sequence[tuple[str, str, Sequence[str]]], train: Sequence[Sample], heldout: Sequence[Sample]
    ) -> TrainResult:
        """Stages 1 and 2 read ``corpus`` (and, with ``stage2_data``, the texts of ``train``'s outputs and
        references); stage 3 fine-tunes on ``train``'s ratings and keeps the epoch best on ``heldout``."""
        config = self.config
        if not train:
            raise ValueError("REFEREE stage 3 needs rated outputs to fine-tune on")
        if config.reads_corpus and not corpus:
            raise ValueError("REFEREE stage 1, and stage 2 unless stage2_data is \"outputs\", need a corpus of "
                             "sources with references")
        started = time.perf_counter()
        seed_everything(config.seed)
        rng = random.Random(config.seed)
        encoder = load_encoder(config.encoder, max_length=config.max_length)
        signals = [*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS, HUMAN_SIGNAL]
        model = RefereeModel(encoder, signals).to(self.device)

        synthetic: list[SyntheticExample] = []
        outputs: list[SyntheticExample] = []
        stats: dict[str, tuple[float, float]] = {}
        if config.pretrains:
            t0 = time.perf_counter()
            synthetic, outputs, stats = self.synthetic(model, corpus, train)
            self.stage_seconds["signals"] = time.perf_counter() - t0

        def normalised(e: SyntheticExample) -> dict[str, float | None]:
            return {k: None if v is None or k not in stats else (v - stats[k][0]) / stats[k][1]
                    for k, v in e.signals.items()}

        synthetic_data = [((e.complex, e.output), normalised(e)) for e in synthetic]
        outputs_data = [((e.complex, e.output), normalised(e)) for e in outputs]
        human_data: list[tuple[tuple[str, str], dict[str, float | None]]] = [
            ((s.complex, s.output), {HUMAN_SIGNAL: s.z}) for s in train
        ]
        plan: list[tuple[str, list[str], Any, int]] = []
        if 1 in config.stages:
            plan.append(("stage1", list(REFERENCE_FREE_SIGNALS), synthetic_data, config.synthetic_epochs))
        if 2 in config.stages:
            stage2_data = [*(synthetic_data if config.stage2_data != "outputs" else []), *outputs_data]
            plan.append(("stage2", [*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS], stage2_data,
                         config.stage2_epochs or config.synthetic_epochs))
        plan.append(("stage3", [HUMAN_SIGNAL], human_data, config.finetune_epochs))
        self.total_steps = sum(self._steps(d, names) * n for _, names, d, n in plan)

        best: tuple[int, HeldoutMetrics] | None = None  # (epoch, its held-out metrics)
        best_key: SelectionKey | None = None
        history: list[dict[str, Any]] = []
        best_dir = self.out_dir / BEST_DIR
        for stage, stage_signals, data, epochs in plan:
            t0 = time.perf_counter()
            optimizer = self._optimizer(model, stage)
            for _ in range(epochs):
                self.epoch += 1
                loss = self._run_epoch(model, optimizer, data, stage_signals, rng)
                metrics = self.evaluate(model, heldout) if stage == "stage3" else None
                is_best = False
                if metrics is not None:  # LENS's rule: tau, else the loss; without held-out the last epoch
                    key = selection_key(metrics, "tau")
                    if improves_on(key, best_key):
                        best, best_key, is_best = (self.epoch, metrics), key, True
                        self._save(model, best_dir, stats, synthetic)
                history.append({"stage": stage, "epoch": self.epoch, "loss": loss,
                                "heldout": metrics.to_dict() if metrics else None})
                emit(self.callbacks, ProgressEvent("epoch", self.epoch, self.step, self.total_steps, loss,
                                                   heldout=metrics, is_best=is_best))
                check_cancel(self.callbacks, epoch=self.epoch, step=self.step)
                if stage == "stage3" and should_stop(self.callbacks):
                    break
            self.stage_seconds[stage] = time.perf_counter() - t0
        if best is None:  # stage 3 stopped before its first epoch ended
            self._save(model, best_dir, stats, synthetic)
            best = (self.epoch, HeldoutMetrics(tau={}, pearson=None, loss=None))
        made = Counter(e.degradation for e in synthetic if e.degradation is not None)
        pretrained_on = dict.fromkeys(name for stage, names, _, _ in plan if stage != "stage3" for name in names)
        masked = [name for name in pretrained_on if name not in stats]
        warnings = [f"the {name} signal was masked in pre-training: "
                    f"{self.unavailable_signals.get(name, 'no synthetic output has a value')}" for name in masked]
        results = {**best[1].to_dict(), "stage_seconds": dict(self.stage_seconds),
                   "synthetic_outputs": len(synthetic),
                   "degraded_share": (sum(made.values()) / len(synthetic)) if synthetic else None,
                   "degradations": dict(sorted(made.items())),
                   "rated_outputs": len(outputs),
                   "rated_outputs_degraded": sum(e.degraded for e in outputs),
                   "masked_signals": masked,
                   "stages": list(config.stages)}
        return TrainResult(best_checkpoint=best_dir, best_epoch=best[0], heldout=results,
                           train_seconds=time.perf_counter() - started, device=str(self.device), history=history,
                           warnings=warnings)

    def _save(self, model: RefereeModel, directory: Path, stats: dict[str, tuple[float, float]],
              synthetic: Sequence[SyntheticExample]) -> None:
        write_checkpoint(
            directory, modules={"model": model}, encoder=model.pair.encoder,
            metadata={"kind": KIND, "encoder": self.config.encoder, "max_length": self.config.max_length,
                      "signals": list(model.signals), "signal_stats": {k: list(v) for k, v in stats.items()},
                      "train": self.config.to_dict(), "synthetic_outputs": len(synthetic)},
        )


def train(
    config: RefereeConfig,
    corpus: Sequence[tuple[str, str, Sequence[str]]],
    train_samples: Sequence[Sample],
    heldout: Sequence[Sample],
    *,
    out_dir: Path,
    callbacks: Sequence[Callback] = (),
    known_signals: Mapping[SignalKey, Mapping[str, float | None]] | None = None,
) -> TrainResult:
    """Train REFEREE: ``corpus`` rows are (source id, complex, references) for the synthetic stages,
    ``train_samples`` / ``heldout`` rated outputs (z targets, raw ratings for the tau-like) for stage 3;
    ``known_signals``: synthetic outputs' signals computed earlier (:func:`metrics.referee.data.compute_signals`)."""
    trainer = RefereeTrainer(config, out_dir=out_dir, callbacks=callbacks, known_signals=known_signals)
    return trainer.fit(corpus, train_samples, heldout)
