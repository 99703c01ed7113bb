"""Serving SIERA: P(output simpler than its source), averaged over the seeds' models."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file

from metrics.learned.checkpoint import Metadata, load_weights, read_checkpoint
from metrics.learned.pairs import PairScorer, score_by_length
from metrics.lens.inference import resolve_device
from metrics.siera.model import SieraModel


class SieraScorer(PairScorer):
    def __init__(self, models: list[SieraModel], metadata: Metadata) -> None:
        self.models = models
        self.metadata = metadata

    @classmethod
    def load(cls, directory: str | Path, *, device: str | None = None, max_length: int | None = None) -> SieraScorer:
        """``max_length`` overrides the tokens a pair is read to (None: the version's own); ``device`` None is
        CUDA when available, as for training and LENS."""
        directory = Path(directory)
        metadata, encoder = read_checkpoint(directory, kind="siera", max_length=max_length)
        load_weights(encoder, directory / "encoder.safetensors")
        target = resolve_device(device)
        models: list[SieraModel] = []
        seed_states = metadata["seed_states"]
        assert isinstance(seed_states, dict)
        for name, keys in sorted(seed_states.items()):
            assert isinstance(keys, list)
            stored = load_file(str(directory / f"{name}.safetensors"))
            state = {str(key): stored[f"t{i}"] for i, key in enumerate(keys)}
            model = SieraModel(encoder if not models else copy.deepcopy(encoder))
            model.load_state_dict(state, strict=False)
            models.append(model.to(target).eval())
        return cls(models, metadata)

    def prefer(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32) -> list[float]:
        """P(second simpler than first) per pair, both orders, averaged over the seeds (batched by length)."""
        return score_by_length(
            pairs, batch_size, lambda chunk: torch.stack([m.two_way(chunk) for m in self.models]).mean(dim=0).tolist()
        )

    def predict(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32) -> list[float]:
        """Score of (source, output) pairs: the probability that the output is simpler than the source."""
        return self.prefer(pairs, batch_size=batch_size)

    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Whether each pair is longer than this version reads (in either order, the same length)."""
        return self.models[0].pair.cut(pairs)

