"""The REFEREE network: "complex [SEP] output" -> each side pooled apart -> one linear head per signal."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from metrics.learned.pairs import PairEncoder
from metrics.lens.encoders import TextEncoder


class RefereeModel(nn.Module):
    """Predicts every supervision signal of a (complex, output) pair; ``signals`` fixes the head order."""

    def __init__(self, encoder: TextEncoder, signals: Sequence[str]) -> None:
        super().__init__()
        self.pair = PairEncoder(encoder)
        self.signals = tuple(signals)
        self.heads = nn.ModuleDict({name: nn.Linear(self.pair.pair_size, 1) for name in self.signals})

    def forward(self, pairs: Sequence[tuple[str, str]]) -> Tensor:
        """``[B, S]`` predictions, columns in ``self.signals`` order."""
        pooled = self.pair.pairs(pairs)
        return torch.cat([self.heads[name](pooled) for name in self.signals], dim=-1)

    def head_parameters(self) -> list[nn.Parameter]:
        return list(self.heads.parameters())


def masked_multihead_loss(predictions: Tensor, targets: Tensor, mask: Tensor) -> Tensor:
    """Mean squared error over the (example, signal) cells where ``mask`` is True.

    Every signal present in the batch weighs the same whatever how many examples have it: the loss is the
    mean over signals of each signal's mean error over its present cells. A batch with no cell present
    gives a zero that still carries a gradient.
    """
    mask_f = mask.to(predictions.dtype)
    errors = (predictions - torch.nan_to_num(targets)) ** 2 * mask_f
    per_signal_count = mask_f.sum(dim=0)
    present = per_signal_count > 0
    if not bool(present.any()):
        return (predictions * 0.0).sum()
    per_signal = errors.sum(dim=0)[present] / per_signal_count[present]
    return per_signal.mean()
