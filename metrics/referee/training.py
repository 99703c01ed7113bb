"""REFEREE training: synthetic pre-training (stage 1), + reference-based signals (stage 2), fine-tuning on
z-scored human ratings (stage 3); the checkpoint kept is the stage-3 epoch with the best held-out tau-like.

Every stage runs on the family's training skeleton (:func:`metrics.learned.training.fit_epochs`): a step
event every ten steps and one epoch event per epoch (held-out results on stage-3 epochs, which
alone are candidates for the best epoch), cancellation polled every step.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor

from evaluation.stats.correlation import pearson
from metrics.learned.callbacks import Callback, HeldoutMetrics, TrainResult
from metrics.learned.checkpoint import write_checkpoint
from metrics.learned.config import Json
from metrics.learned.pairs import load_encoder
from metrics.learned.training import (
    BEST_DIR,
    Epoch,
    EpochLoop,
    chunks,
    fit_epochs,
    make_batches,
    seed_everything,
)
from metrics.lens.config import Precision
from metrics.lens.inference import autocast, resolve_device
from metrics.lens.loss import pairwise_rank_loss
from metrics.lens.types import Sample
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
Rows = Sequence[tuple[tuple[str, str], dict[str, float | None]]]
"""Training pairs (complex, output) with their targets, by signal."""
Stage = tuple[str, list[str], Rows, int]
"""A stage of the plan: its name, the signals it trains, its rows and its epochs."""


class RefereeTrainer:
    def __init__(
        self, config: RefereeConfig, *, out_dir: Path, callbacks: Sequence[Callback] = (),
        known_signals: Mapping[SignalKey, Mapping[str, float | None]] | None = None,
    ) -> None:
        self.config = config
        self.known_signals = known_signals  # signals computed earlier (compute_signals' ``known``)
        self.out_dir = Path(out_dir)
        self.loop = EpochLoop(list(callbacks))
        self.device = resolve_device(config.device)
        self.precision = cast(Precision, config.precision)
        self.stage_seconds: dict[str, float] = {}
        self.unavailable_signals: dict[str, str] = {}  # signal -> why it could not be computed

    # --- data ------------------------------------------------------------------------------------------

    def _cosines(self, model: RefereeModel, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out: list[float] = []
        with torch.no_grad():
            for chunk in chunks(pairs, 64, None):
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
        data: Rows, signals: Sequence[str], rng: random.Random,
    ) -> float:
        """One epoch of ``signals``' heads on ``data``; returns its mean loss."""
        model.train()
        columns = [model.signals.index(s) for s in signals]
        ranks = self._ranks(signals)
        total, count = 0.0, 0
        for batch in self._batches(data, signals, rng):
            self.loop.check_cancel()
            with autocast(self.device, self.precision):
                predictions = model([pair for pair, _ in batch])[:, columns].float()
            targets, mask = self._targets([row for _, row in batch], signals)
            loss = masked_multihead_loss(predictions, targets, mask)
            if ranks:
                loss = loss + self.config.rank_weight * pairwise_rank_loss(predictions[:, 0], targets[:, 0])
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimizer.step()
            value = float(loss.detach())
            self.loop.step_done(value)
            total, count = total + value, count + 1
        return total / max(1, count)

    def _batches(
        self, data: Rows, signals: Sequence[str], rng: random.Random,
    ) -> list[list[tuple[tuple[str, str], dict[str, float | None]]]]:
        """An epoch's batches: shuffled chunks, or with the ranking term in stage 3 single-source batches (the
        outputs of one complex sentence, as LENS's), so its pairs are the ones the tau-like compares."""
        if self._ranks(signals):
            return make_batches(data, self.config.batch_size, rng, source=lambda item: item[0][0])
        return chunks(data, self.config.batch_size, rng)

    def _ranks(self, signals: Sequence[str]) -> bool:
        """Whether a stage training ``signals`` adds the ranking term: stage 3 (human ratings) with a weight."""
        return list(signals) == [HUMAN_SIGNAL] and self.config.rank_weight > 0

    def _steps(self, data: Rows, signals: Sequence[str]) -> int:
        return len(self._batches(data, signals, random.Random(0)))

    def predict(self, model: RefereeModel, pairs: Sequence[tuple[str, str]]) -> list[float]:
        model.eval()
        column = model.signals.index(HUMAN_SIGNAL)
        out: list[float] = []
        with torch.no_grad(), autocast(self.device, self.precision):
            for chunk in chunks(pairs, 64, None):
                out.extend(model(chunk)[:, column].float().tolist())
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
        model = RefereeModel(encoder, [*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS, HUMAN_SIGNAL]).to(self.device)

        synthetic: list[SyntheticExample] = []
        outputs: list[SyntheticExample] = []
        stats: dict[str, tuple[float, float]] = {}
        if config.pretrains:
            t0 = time.perf_counter()
            synthetic, outputs, stats = self.synthetic(model, corpus, train)
            self.stage_seconds["signals"] = time.perf_counter() - t0
        plan = self._plan(synthetic, outputs, stats, train)
        self.loop.total_steps = sum(self._steps(d, names) * n for _, names, d, n in plan)
        best_dir = self.out_dir / BEST_DIR
        best_metrics = self._run_stages(model, plan, heldout, rng,
                                        keep_best=lambda: self._save(model, best_dir, stats, synthetic))
        loop = self.loop
        if best_metrics is None:  # stage 3 stopped before its first epoch ended
            self._save(model, best_dir, stats, synthetic)
            loop.best_epoch, best_metrics = loop.epoch, HeldoutMetrics(tau={}, pearson=None, loss=None)
        results, warnings = self._results(best_metrics, plan, synthetic, outputs, stats)
        return TrainResult(best_checkpoint=best_dir, best_epoch=loop.best_epoch, heldout=results,
                           train_seconds=time.perf_counter() - started, device=str(self.device),
                           history=loop.history, warnings=warnings)

    def _plan(self, synthetic: Sequence[SyntheticExample], outputs: Sequence[SyntheticExample],
              stats: dict[str, tuple[float, float]], train: Sequence[Sample]) -> list[Stage]:
        """The stages the config asks for, each with its signals, its rows (signals normalised by ``stats``;
        one without stats is masked) and its epochs."""
        config = self.config

        def rows(examples: Sequence[SyntheticExample]) -> list[tuple[tuple[str, str], dict[str, float | None]]]:
            return [((e.complex, e.output), {k: None if v is None or k not in stats else (v - stats[k][0]) / stats[k][1]
                                             for k, v in e.signals.items()}) for e in examples]

        synthetic_data, outputs_data = rows(synthetic), rows(outputs)
        human_data: Rows = [((s.complex, s.output), {HUMAN_SIGNAL: s.z}) for s in train]
        plan: list[Stage] = []
        if 1 in config.stages:
            plan.append(("stage1", list(REFERENCE_FREE_SIGNALS), synthetic_data, config.synthetic_epochs))
        if 2 in config.stages:
            stage2_data = [*(synthetic_data if config.stage2_data != "outputs" else []), *outputs_data]
            plan.append(("stage2", [*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS], stage2_data,
                         config.stage2_epochs or config.synthetic_epochs))
        plan.append(("stage3", [HUMAN_SIGNAL], human_data, config.finetune_epochs))
        return plan

    def _run_stages(self, model: RefereeModel, plan: Sequence[Stage], heldout: Sequence[Sample],
                    rng: random.Random, *, keep_best: Callable[[], None]) -> HeldoutMetrics | None:
        """Train every stage of ``plan`` in turn on the family's skeleton; stage 3 evaluates on ``heldout``, keeps
        its best epoch (``keep_best``) and may stop early. Returns the best epoch's metrics (None: none ended)."""
        for stage, stage_signals, data, epochs in plan:
            t0 = time.perf_counter()
            optimizer = self._optimizer(model, stage)
            fine_tuning = stage == "stage3"

            def run(optimizer: torch.optim.Optimizer = optimizer, data: Rows = data,
                    stage_signals: list[str] = stage_signals, stage: str = stage) -> dict[str, Json]:
                self._run_epoch(model, optimizer, data, stage_signals, rng)
                return {"stage": stage}

            fit_epochs(self.loop, epochs, Epoch(
                train=run,
                evaluate=(lambda: self.evaluate(model, heldout)) if fine_tuning else (lambda: None),
                keep_best=lambda _metrics: keep_best(),
                stops_early=fine_tuning,
            ))
            self.stage_seconds[stage] = time.perf_counter() - t0
        return self.loop.best_metrics

    def _results(self, best_metrics: HeldoutMetrics, plan: Sequence[Stage], synthetic: Sequence[SyntheticExample],
                 outputs: Sequence[SyntheticExample], stats: dict[str, tuple[float, float]],
                 ) -> tuple[dict[str, Any], list[str]]:
        """A run's held-out results with what it pre-trained on, and a warning per masked pre-training signal."""
        made = Counter(e.degradation for e in synthetic if e.degradation is not None)
        pretrained_on = dict.fromkeys(name for stage, names, _, _ in plan if stage != "stage3" for name in names)
        masked = [name for name in pretrained_on if name not in stats]
        warnings = [f"the {name} signal was masked in pre-training: "
                    f"{self.unavailable_signals.get(name, 'no synthetic output has a value')}" for name in masked]
        results = {**best_metrics.to_dict(), "stage_seconds": dict(self.stage_seconds),
                   "synthetic_outputs": len(synthetic),
                   "degraded_share": (sum(made.values()) / len(synthetic)) if synthetic else None,
                   "degradations": dict(sorted(made.items())),
                   "rated_outputs": len(outputs),
                   "rated_outputs_degraded": sum(e.degraded for e in outputs),
                   "masked_signals": masked,
                   "stages": list(self.config.stages)}
        return results, warnings

    def _save(self, model: RefereeModel, directory: Path, stats: dict[str, tuple[float, float]],
              synthetic: Sequence[SyntheticExample]) -> None:
        write_checkpoint(
            directory, kind=KIND, config=self.config.to_dict(), modules={"model": model},
            encoder=model.pair.encoder, encoder_name=self.config.encoder,
            metadata={"max_length": self.config.max_length, "signals": list(model.signals),
                      "signal_stats": {k: list(v) for k, v in stats.items()}, "synthetic_outputs": len(synthetic)},
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
