"""A fourth learned kind, as small as a kind can be: what "adding a learned metric" takes.

A linear model on two features of the (complex, output) pair, fitted to the z-scored ratings on the family's
training skeleton and saved in the family's checkpoint format. Registering it (the last line) is all the
product needs: versions, ``toy:latest``, ``train_metric --kind toy``, the admin and the API follow.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from evaluation.stats.correlation import pearson
from metrics.learned.callbacks import Callback, HeldoutMetrics, TrainResult
from metrics.learned.checkpoint import load_weights, read_metadata, write_checkpoint
from metrics.learned.config import Json, LearnedConfig, Rule
from metrics.learned.kinds import LearnedKind, Scored, Scorer, TrainingInputs, Triple, register_kind
from metrics.learned.training import BEST_DIR, Epoch, EpochLoop, chunks, fit_epochs, seed_everything
from metrics.lens.types import Sample


@dataclass(frozen=True)
class ToyConfig(LearnedConfig):
    encoder: str = field(default="none", metadata={"rule": Rule("str")})
    epochs: int = field(default=3, metadata={"rule": Rule("int", minimum=1, maximum=50)})
    lr: float = field(default=0.1, metadata={"rule": Rule("float", minimum=0, above=True)})
    batch_size: int = field(default=8, metadata={"rule": Rule("int", minimum=1)})
    seed: int = field(default=0, metadata={"rule": Rule("int")})
    heldout_fraction: float = field(default=0.25, metadata={"rule": Rule("float", minimum=0, maximum=0.5)})
    device: str | None = field(default=None, metadata={"rule": Rule("str", optional=True, settable=False)})


def features(complex_text: str, output: str) -> list[float]:
    """Length ratio and the share of output words found in the complex sentence."""
    words = output.split()
    seen = set(complex_text.split())
    return [len(output) / max(1, len(complex_text)), sum(w in seen for w in words) / max(1, len(words))]


class ToyScorer:
    def __init__(self, model: torch.nn.Linear) -> None:
        self.model = model.eval()

    def score(self, items: Sequence[Triple]) -> list[Scored]:
        with torch.no_grad():
            x = torch.tensor([features(i.complex, i.output) for i in items])
            return [(float(v), {}) for v in self.model(x)[:, 0]]


@dataclass(frozen=True)
class ToyKind(LearnedKind):
    def train(self, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
              callbacks: Sequence[Callback]) -> TrainResult:
        assert isinstance(config, ToyConfig)
        seed_everything(config.seed)
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=config.lr)
        rng = random.Random(config.seed)
        loop = EpochLoop(list(callbacks), total_steps=config.epochs * len(chunks(inputs.train, config.batch_size)),
                         select_by="loss")
        best_dir = Path(out_dir) / BEST_DIR

        def batch(samples: Sequence[Sample]) -> tuple[torch.Tensor, torch.Tensor]:
            return (torch.tensor([features(s.complex, s.output) for s in samples]),
                    torch.tensor([s.z for s in samples]))

        def train_epoch() -> dict[str, Json]:
            for samples in chunks(inputs.train, config.batch_size, rng):
                loop.check_cancel()
                x, y = batch(samples)
                loss = torch.nn.functional.mse_loss(model(x)[:, 0], y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                loop.step_done(float(loss.detach()))
            return {}

        def evaluate() -> HeldoutMetrics:
            if not inputs.heldout:
                return HeldoutMetrics(tau={}, pearson=None, loss=None)
            x, y = batch(inputs.heldout)
            with torch.no_grad():
                predicted = model(x)[:, 0]
            return HeldoutMetrics(tau={}, pearson=pearson(predicted.tolist(), y.tolist()),
                                  loss=float(torch.nn.functional.mse_loss(predicted, y)))

        def keep_best(metrics: HeldoutMetrics) -> None:
            write_checkpoint(best_dir, kind=self.name, config=config.to_dict(), modules={"model": model},
                             encoder=None, encoder_name=config.encoder, metadata={"epoch": loop.epoch})

        fit_epochs(loop, config.epochs, Epoch(train=train_epoch, evaluate=evaluate, keep_best=keep_best))
        assert loop.best_metrics is not None
        return TrainResult(best_checkpoint=best_dir, best_epoch=loop.best_epoch, heldout=loop.best_metrics.to_dict(),
                           train_seconds=0.0, device="cpu", history=loop.history)

    def load(self, path: Path, *, device: str | None = None, precision: str = "fp32") -> Scorer:
        assert read_metadata(path)["kind"] == self.name
        model = torch.nn.Linear(2, 1)
        load_weights(model, path / "model.safetensors")
        return ToyScorer(model)


TOY = register_kind(ToyKind("toy", "Toy", ToyConfig, needs_campaigns=True, uses_corpora=False))
