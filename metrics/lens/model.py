"""The LENS network: shared encoder, layer-wise attention, mean pooling, feed-forward regressor."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from metrics.lens.config import LensConfig
from metrics.lens.encoders import TextEncoder

ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU, "gelu": nn.GELU}
NUM_FEATURE_BLOCKS = 7


@dataclass(frozen=True)
class IndexedBatch:
    """Samples of a batch as indices into ``texts``, the batch's distinct texts (each encoded once).

    Attributes:
        texts: Distinct texts of the batch.
        complex_idx: ``[B]`` index of each sample's complex sentence.
        output_idx: ``[B]`` index of each sample's output.
        ref_idx: ``[B, R]`` indices of the references, padded with 0.
        ref_mask: ``[B, R]`` True where ``ref_idx`` is a real reference.
    """

    texts: list[str]
    complex_idx: Tensor
    output_idx: Tensor
    ref_idx: Tensor
    ref_mask: Tensor

    @classmethod
    def build(cls, triples: Sequence[tuple[str, str, Sequence[str]]]) -> IndexedBatch:
        index: dict[str, int] = {}

        def position(text: str) -> int:
            return index.setdefault(text, len(index))

        complex_idx = [position(c) for c, _, _ in triples]
        output_idx = [position(s) for _, s, _ in triples]
        width = max((len(refs) for _, _, refs in triples), default=1)
        ref_idx = torch.zeros(len(triples), width, dtype=torch.long)
        ref_mask = torch.zeros(len(triples), width, dtype=torch.bool)
        for row, (_, _, refs) in enumerate(triples):
            for col, ref in enumerate(refs):
                ref_idx[row, col] = position(ref)
                ref_mask[row, col] = True
        return cls(
            texts=list(index),
            complex_idx=torch.tensor(complex_idx, dtype=torch.long),
            output_idx=torch.tensor(output_idx, dtype=torch.long),
            ref_idx=ref_idx,
            ref_mask=ref_mask,
        )

    def to(self, device: torch.device) -> IndexedBatch:
        return IndexedBatch(
            texts=self.texts,
            complex_idx=self.complex_idx.to(device),
            output_idx=self.output_idx.to(device),
            ref_idx=self.ref_idx.to(device),
            ref_mask=self.ref_mask.to(device),
        )


class LayerMix(nn.Module):
    """Softmax-weighted sum of layers times a learned scale (a scalar mix)."""

    def __init__(self, num_layers: int) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers: Tensor) -> Tensor:
        """``[N, L, H]`` -> ``[N, H]``."""
        probs = torch.softmax(self.weights, dim=0).to(layers.dtype)
        return self.gamma.to(layers.dtype) * torch.einsum("l,nlh->nh", probs, layers)


def mean_pool_layers(states: Tensor, attention_mask: Tensor) -> Tensor:
    """Mean over non-padding tokens of every layer: ``[L, N, T, H]`` -> ``[N, L, H]`` (float32)."""
    mask = attention_mask.to(torch.float32)[None, :, :, None]
    summed = (states.to(torch.float32) * mask).sum(dim=2)
    counts = mask.sum(dim=2).clamp(min=1.0)
    return (summed / counts).transpose(0, 1)


class LensModel(nn.Module):
    """Encoder + layer mix + head that predicts a z-score for every (complex, output, reference)."""

    def __init__(self, config: LensConfig, encoder: TextEncoder) -> None:
        super().__init__()
        self.config = config
        self.encoder = encoder
        self.layer_mix = LayerMix(encoder.num_layers)
        if config.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {config.activation!r}; known: {sorted(ACTIVATIONS)}")
        layers: list[nn.Module] = []
        width = NUM_FEATURE_BLOCKS * encoder.hidden_size
        for size in config.hidden_sizes:
            layers += [nn.Linear(width, size), ACTIVATIONS[config.activation](), nn.Dropout(config.dropout)]
            width = size
        layers.append(nn.Linear(width, 1))
        self.head = nn.Sequential(*layers)

    def head_parameters(self) -> list[nn.Parameter]:
        return [*self.layer_mix.parameters(), *self.head.parameters()]

    def pooled_layers(self, texts: Sequence[str]) -> Tensor:
        """Per-layer mean-pooled states ``[N, L, H]``; the unit cached while the encoder is frozen."""
        device = self.layer_mix.weights.device
        encoded = {name: value.to(device) for name, value in self.encoder.tokenize(texts).items()}
        states = self.encoder.layer_states(encoded["input_ids"], encoded["attention_mask"])
        return mean_pool_layers(states, encoded["attention_mask"])

    def mix(self, pooled: Tensor) -> Tensor:
        """``[N, L, H]`` -> ``[N, H]``. Mixing commutes with mean pooling, so pooled layers can be cached."""
        if self.config.layer_mix:
            mixed: Tensor = self.layer_mix(pooled)
            return mixed
        return pooled[:, -1]

    def embed(self, texts: Sequence[str]) -> Tensor:
        return self.mix(self.pooled_layers(texts))

    def score_vectors(self, complex_vec: Tensor, output_vec: Tensor, ref_vec: Tensor) -> Tensor:
        """Predictions ``[B, R]`` from ``c [B, H]``, ``s [B, H]`` and ``r [B, R, H]``."""
        width = ref_vec.shape[1]
        c = complex_vec[:, None, :].expand(-1, width, -1)
        s = output_vec[:, None, :].expand(-1, width, -1)
        r = ref_vec
        features = torch.cat([c, s, r, s * r, (s - r).abs(), s * c, (s - c).abs()], dim=-1)
        scores: Tensor = self.head(features)
        return scores.squeeze(-1).to(torch.float32)

    def forward(self, vectors: Tensor, batch: IndexedBatch) -> Tensor:
        """Predictions ``[B, R]`` (values at masked references are meaningless) from ``vectors [U, H]``."""
        return self.score_vectors(vectors[batch.complex_idx], vectors[batch.output_idx], vectors[batch.ref_idx])

