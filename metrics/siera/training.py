"""SIERA training: one ranker per seed (top encoder layers and the classifier trainable, AdamW,
cross-entropy, early stopping on the validation loss of a by-source split); the best state of every seed
is kept and the probabilities are averaged at scoring time."""

from __future__ import annotations

import copy
import dataclasses
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from metrics.learned import (
    Callback,
    HeldoutMetrics,
    ProgressEvent,
    TrainResult,
    check_cancel,
    emit,
    load_encoder,
    seed_everything,
    should_stop,
    write_checkpoint,
)
from metrics.lens.inference import resolve_device
from metrics.siera.config import SieraConfig
from metrics.siera.data import Pair, Similarity, silver_similarity, training_pairs
from metrics.siera.model import SieraModel

KIND = "siera"
BEST_DIR = "best"
PROGRESS_EVERY = 10


def split_validation(
    by_source: dict[str, list[Pair]], fraction: float, seed: int
) -> tuple[list[Pair], list[Pair]]:
    """Train and validation pairs, split by source (seeded)."""
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


def _evaluate(model: SieraModel, pairs: Sequence[Pair], batch_size: int) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) on labelled pairs."""
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i:i + batch_size]
            logits = model([(a, b) for a, b, _ in chunk])
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
    """Train SIERA on labelled pairs grouped by source id (validation is split by source).

    ``train`` builds the pairs from a corpus of references; an experiment that labels pairs another way
    (the paper's Table 5 labels them from human ratings, ``rated_pairs``) trains through here.
    """
    started = time.perf_counter()
    device = resolve_device(config.device)
    train_pairs, valid = split_validation(by_source, config.validation_fraction, config.seeds[0])
    if not train_pairs or not valid:
        raise ValueError("SIERA needs pairs from at least two sources (train and validation)")
    base = load_encoder(config.encoder, max_length=config.max_length)
    steps_per_epoch = math.ceil(len(train_pairs) / config.batch_size)
    total = steps_per_epoch * config.epochs * len(config.seeds)
    states: dict[str, dict[str, torch.Tensor]] = {}
    per_seed: dict[str, dict[str, Any]] = {}
    history: list[dict[str, Any]] = []
    epoch = step = 0
    model: SieraModel | None = None
    for seed in config.seeds:
        seed_everything(seed)
        model = SieraModel(copy.deepcopy(base)).to(device)
        model.pair.set_trainable_top_layers(config.trainable_layers)
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=config.lr)
        rng = random.Random(seed)
        best: tuple[float, float, int] | None = None
        stale = 0
        for _ in range(config.epochs):
            epoch += 1
            model.train()
            order = list(train_pairs)
            rng.shuffle(order)
            running, count = 0.0, 0
            for i in range(0, len(order), config.batch_size):
                check_cancel(callbacks, epoch=epoch, step=step)
                chunk = order[i:i + config.batch_size]
                logits = model([(a, b) for a, b, _ in chunk])
                labels = torch.tensor([y for _, _, y in chunk], device=device)
                loss = nn.functional.cross_entropy(logits, labels)
                optimizer.zero_grad()
                loss.backward()  # type: ignore[no-untyped-call]
                optimizer.step()
                step += 1
                running, count = running + float(loss.detach()), count + 1
                if step % PROGRESS_EVERY == 0:
                    emit(callbacks, ProgressEvent("step", epoch, step, total, running / count))
            val_loss, accuracy = _evaluate(model, valid, 2 * config.batch_size)
            is_best = best is None or val_loss < best[0]
            if is_best:
                best, stale = (val_loss, accuracy, epoch), 0
                states[f"seed{seed}"] = _trainable_state(model)
            else:
                stale += 1
            history.append({"seed": seed, "epoch": epoch, "loss": running / max(1, count),
                            "val_loss": val_loss, "val_accuracy": accuracy})
            emit(callbacks, ProgressEvent("epoch", epoch, step, total, running / max(1, count),
                                          heldout=HeldoutMetrics(tau={}, pearson=None, loss=val_loss),
                                          is_best=is_best))
            check_cancel(callbacks, epoch=epoch, step=step)
            if stale >= config.patience or should_stop(callbacks):
                break
        assert best is not None
        per_seed[str(seed)] = {"val_loss": best[0], "val_accuracy": best[1], "best_epoch": best[2]}
    assert model is not None
    best_dir = Path(out_dir) / BEST_DIR
    _save(best_dir, base, states, config, counts={"train_pairs": len(train_pairs), "validation_pairs": len(valid)})
    losses = [v["val_loss"] for v in per_seed.values()]
    accuracies = [v["val_accuracy"] for v in per_seed.values()]
    results = {"tau": {}, "pearson": None, "loss": sum(losses) / len(losses),
               "accuracy": sum(accuracies) / len(accuracies), "seeds": per_seed,
               "train_pairs": len(train_pairs), "validation_pairs": len(valid)}
    return TrainResult(best_checkpoint=best_dir, best_epoch=min(int(v["best_epoch"]) for v in per_seed.values()),
                       heldout=results, train_seconds=time.perf_counter() - started, device=str(device),
                       history=history)


class _StateDict(nn.Module):
    """Wraps a plain tensor dict so ``write_checkpoint`` can store it."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        super().__init__()
        for i, (_name, tensor) in enumerate(sorted(tensors.items())):
            self.register_buffer(f"t{i}", tensor)
        self.names = sorted(tensors)


def _save(directory: Path, base: Any, states: dict[str, dict[str, torch.Tensor]], config: SieraConfig,
          counts: dict[str, int]) -> None:
    modules: dict[str, nn.Module] = {"encoder": base}
    modules.update({name: _StateDict(state) for name, state in states.items()})
    write_checkpoint(directory, modules=modules, encoder=base, metadata={
        "kind": KIND, "encoder": config.encoder, "max_length": config.max_length, "train": config.to_dict(),
        "seed_states": {name: sorted(state) for name, state in states.items()}, **counts,
    })
