"""Serving REFEREE: load a checkpoint offline, score (complex, output) pairs with the human head."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from metrics.learned.checkpoint import Metadata, load_weights, read_checkpoint
from metrics.learned.pairs import PairScorer, score_by_length
from metrics.lens.inference import resolve_device
from metrics.referee.config import HUMAN_SIGNAL
from metrics.referee.model import RefereeModel


class RefereeScorer(PairScorer):
    """A loaded REFEREE version; :meth:`predict` gives the predicted z-scored rating (higher is better)."""

    def __init__(self, model: RefereeModel, metadata: Metadata, device: torch.device) -> None:
        self.model = model
        self.metadata = metadata
        self.device = device

    @classmethod
    def load(cls, directory: str | Path, *, device: str | None = None, max_length: int | None = None) -> RefereeScorer:
        """``max_length`` overrides the tokens a pair is read to (None: the version's own); ``device`` None is
        CUDA when available, as for training and LENS."""
        metadata, encoder = read_checkpoint(Path(directory), kind="referee", max_length=max_length)
        signals = metadata["signals"]
        assert isinstance(signals, list)
        model = RefereeModel(encoder, [str(s) for s in signals])
        load_weights(model, Path(directory) / "model.safetensors")
        target = resolve_device(device)
        model.to(target).eval()
        return cls(model, metadata, target)

    def predict(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32) -> list[float]:
        """The human head's prediction per (complex, output) pair, batched by length."""
        column = self.model.signals.index(HUMAN_SIGNAL)
        return score_by_length(pairs, batch_size, lambda chunk: self.model(chunk)[:, column].tolist())

    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Whether each pair is longer than this version reads (its score misses the end of the output)."""
        return self.model.pair.cut(pairs)
