"""SIERA training: one ranker per seed (top encoder layers and the classifier trainable, AdamW,
cross-entropy), each on the family's training skeleton (:func:`metrics.learned.training.fit_epochs`): the
held-out loss of a by-source split selects each seed's best epoch (the family's rule with ``select_by``
"loss") and ends it after ``patience`` epochs without improvement. The best state of every seed is kept
and the probabilities are averaged at scoring time."""

from __future__ import annotations

import copy
import dataclasses
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import torch
from torch import nn

from metrics.learned.callbacks import Callback, HeldoutMetrics, TrainResult
from metrics.learned.checkpoint import write_checkpoint
from metrics.learned.config import Json
from metrics.learned.pairs import load_encoder
from metrics.learned.training import BEST_DIR, Epoch, EpochLoop, fit_epochs, seed_everything
from metrics.lens.config import Precision
from metrics.lens.encoders import TextEncoder
from metrics.lens.inference import autocast, resolve_device
from metrics.siera.config import SieraConfig
from metrics.siera.data import Pair, Similarity, silver_similarity, training_pairs
from metrics.siera.model import SieraModel

KIND = "siera"


def split_validation(
    by_source: dict[str, list[Pair]], fraction: float, seed: int
) -> tuple[list[Pair], list[Pair]]:
    """Train and held-out pairs, split by source (seeded)."""
    sources = sorted(by_source)
    random.Random(seed).shuffle(sources)
    n = max(1, round(fraction * len(sources))) if len(sources) > 1 else 0
    held = set(sources[:n])
    train = [p for s in sources if s not in held for p in by_source[s]]
    valid = [p for s in sources if s in held for p in by_source[s]]
    return train, valid


def _trainable_state(model: SieraModel) -> dict[str, torch.Tensor]:
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    return {n: t.detach().clone().cpu().contiguous() for n, t in model.state_dict().items() if n in names}


def _evaluate(model: SieraModel, pairs: Sequence[Pair], batch_size: int,
              precision: str = "fp32") -> tuple[float, float]:
    """(mean cross-entropy, accuracy) on labelled pairs, under ``precision``'s autocast."""
    model.eval()
    loss_sum, correct = 0.0, 0
    device = next(model.parameters()).device
    with torch.no_grad(), autocast(device, cast(Precision, precision)):
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i:i + batch_size]
            logits = model([(a, b) for a, b, _ in chunk]).float()
            labels = torch.tensor([y for _, _, y in chunk], device=logits.device)
            loss_sum += float(nn.functional.cross_entropy(logits, labels, reduction="sum"))
            correct += int((logits.argmax(-1) == labels).sum())
    return loss_sum / max(1, len(pairs)), correct / max(1, len(pairs))


def train(
    config: SieraConfig,
    corpus: Sequence[tuple[str, str, Sequence[str]]],
    *,
    out_dir: Path,
    callbacks: Sequence[Callback] = (),
    similarity: Similarity | None = None,
) -> TrainResult:
    """Train SIERA on (source id, complex, references) rows; the checkpoint holds every seed's model.

    ``similarity`` filters the +Silver sentences; by default the one ``config.silver_filter`` names."""
    started = time.perf_counter()
    used = config.corpus_rows_used
    rows = list(corpus)[:used] if used else list(corpus)
    if similarity is None:
        similarity = silver_similarity(config.silver_filter, device=str(resolve_device(config.device)))
    by_source = training_pairs(rows, max_pairs=config.max_pairs, silver=config.silver,
                               per_pair=config.silver_per_pair, seed=config.seeds[0], similarity=similarity)
    result = train_on_pairs(config, by_source, out_dir=out_dir, callbacks=callbacks)
    # The version's training time includes building the pairs (the silver ones take minutes).
    return dataclasses.replace(result, train_seconds=time.perf_counter() - started)


def train_on_pairs(
    config: SieraConfig,
    by_source: dict[str, list[Pair]],
    *,
    out_dir: Path,
    callbacks: Sequence[Callback] = (),
) -> TrainResult:
    """Train SIERA on labelled pairs grouped by source id (the held-out pairs are split by source).

    ``train`` builds the pairs from a corpus of references; an experiment that labels pairs another way
    (the paper's Table 5 labels them from human ratings, ``rated_pairs``) trains through here.
    """
    started = time.perf_counter()
    device = resolve_device(config.device)
    train_pairs, valid = split_validation(by_source, config.heldout_fraction, config.seeds[0])
    if not train_pairs or not valid:
        raise ValueError("SIERA needs pairs from at least two sources (train and held-out)")
    base = load_encoder(config.encoder, max_length=config.max_length)
    steps_per_epoch = math.ceil(len(train_pairs) / config.batch_size)
    loop = EpochLoop(list(callbacks), total_steps=steps_per_epoch * config.epochs * len(config.seeds),
                     select_by="loss", patience=config.patience)
    states: dict[str, dict[str, torch.Tensor]] = {}
    per_seed: dict[str, dict[str, float]] = {}
    for seed in config.seeds:
        states[f"seed{seed}"], per_seed[str(seed)] = _fit_seed(config, seed, base, train_pairs, valid, loop, device)
    best_dir = Path(out_dir) / BEST_DIR
    _save(best_dir, base, states, config, counts={"train_pairs": len(train_pairs), "validation_pairs": len(valid)})
    losses = [v["val_loss"] for v in per_seed.values()]
    accuracies = [v["val_accuracy"] for v in per_seed.values()]
    results = {"tau": {}, "pearson": None, "loss": sum(losses) / len(losses),
               "accuracy": sum(accuracies) / len(accuracies), "seeds": per_seed,
               "train_pairs": len(train_pairs), "validation_pairs": len(valid)}
    return TrainResult(best_checkpoint=best_dir, best_epoch=min(int(v["best_epoch"]) for v in per_seed.values()),
                       heldout=results, train_seconds=time.perf_counter() - started, device=str(device),
                       history=loop.history)


def _fit_seed(
    config: SieraConfig, seed: int, base: TextEncoder, train_pairs: Sequence[Pair], valid: Sequence[Pair],
    loop: EpochLoop, device: torch.device,
) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """Train one seed's ranker; returns its best trainable state and that epoch's held-out figures."""
    seed_everything(seed)
    model = SieraModel(copy.deepcopy(base)).to(device)
    model.pair.set_trainable_top_layers(config.trainable_layers)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.lr)
    rng = random.Random(seed)
    accuracy = [0.0]  # of the epoch just evaluated
    best: dict[str, float] = {}
    state: dict[str, torch.Tensor] = {}
    loop.new_selection()

    def train_epoch() -> dict[str, Json]:
        model.train()
        order = list(train_pairs)
        rng.shuffle(order)
        for i in range(0, len(order), config.batch_size):
            loop.check_cancel()
            chunk = order[i:i + config.batch_size]
            with autocast(device, cast(Precision, config.precision)):
                logits = model([(a, b) for a, b, _ in chunk]).float()
            labels = torch.tensor([y for _, _, y in chunk], device=device)
            loss = nn.functional.cross_entropy(logits, labels)
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimizer.step()
            loop.step_done(float(loss.detach()))
        return {"seed": seed}

    def evaluate() -> HeldoutMetrics:
        val_loss, accuracy[0] = _evaluate(model, valid, 2 * config.batch_size, config.precision)
        return HeldoutMetrics(tau={}, pearson=None, loss=val_loss)

    def keep_best(metrics: HeldoutMetrics) -> None:
        state.clear()
        state.update(_trainable_state(model))
        best.update(val_loss=float(metrics.loss or 0.0), val_accuracy=accuracy[0], best_epoch=loop.epoch)

    fit_epochs(loop, config.epochs, Epoch(train=train_epoch, evaluate=evaluate, keep_best=keep_best))
    return state, best


class _StateDict(nn.Module):
    """Wraps a plain tensor dict so ``write_checkpoint`` can store it."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        super().__init__()
        for i, (_name, tensor) in enumerate(sorted(tensors.items())):
            self.register_buffer(f"t{i}", tensor)
        self.names = sorted(tensors)


def _save(directory: Path, base: TextEncoder, states: dict[str, dict[str, torch.Tensor]], config: SieraConfig,
          counts: dict[str, int]) -> None:
    modules: dict[str, nn.Module] = {"encoder": base}
    modules.update({name: _StateDict(state) for name, state in states.items()})
    seed_states: dict[str, Json] = {name: list(sorted(state)) for name, state in states.items()}
    write_checkpoint(directory, kind=KIND, config=config.to_dict(), modules=modules, encoder=base,
                     encoder_name=config.encoder,
                     metadata={"max_length": config.max_length, "seed_states": seed_states, **counts})
