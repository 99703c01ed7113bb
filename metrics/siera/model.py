"""The SIERA network: "s [SEP] s'" -> each side pooled apart -> two logits (is s' the simpler one?)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from metrics.learned.pairs import PairEncoder
from metrics.lens.encoders import TextEncoder


class SieraModel(nn.Module):
    def __init__(self, encoder: TextEncoder) -> None:
        super().__init__()
        self.pair = PairEncoder(encoder)
        self.classifier = nn.Linear(self.pair.pair_size, 2)

    def forward(self, pairs: Sequence[tuple[str, str]]) -> Tensor:
        """Logits ``[B, 2]``; class 1 = the second text is simpler."""
        logits: Tensor = self.classifier(self.pair.pairs(pairs))
        return logits

    def two_way(self, pairs: Sequence[tuple[str, str]]) -> Tensor:
        """P(second simpler) read in both orders: ``(P(b simpler | a,b) + P(b simpler | b,a)) / 2``, so
        ``two_way(a, b) + two_way(b, a) == 1``."""
        forward = torch.softmax(self(pairs), dim=-1)[:, 1]
        backward = torch.softmax(self([(b, a) for a, b in pairs]), dim=-1)[:, 0]
        return (forward + backward) / 2
