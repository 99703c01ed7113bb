"""Pair encoding and scoring shared by the reference-free kinds (REFEREE, SIERA); imports torch.

* :class:`PairEncoder`: an offline encoder (``metrics.lens.encoders``) reading ``"a [SEP] b"`` as one text and
  returning the mean-pooled top-layer states of each side and their difference;
* :func:`score_by_length`: scoring in batches of similar length, each result back at its index.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from metrics.learned.kinds import Scored, Triple
from metrics.lens.encoders import TextEncoder, encoder_class


def load_encoder(name_or_path: str, *, max_length: int) -> TextEncoder:
    """A pretrained encoder, offline (``metrics.lens.encoders``: HF name in the local cache, path or alias)."""
    return encoder_class("hf").from_pretrained(name_or_path, max_length=max_length)


class PairEncoder(nn.Module):
    """Encodes ``"a [SEP] b"`` with one transformer and reads each side apart.

    :meth:`pairs` returns ``[u; v; u - v]`` (``pair_size`` = 3 x hidden), ``u`` and ``v`` the mean-pooled
    top-layer states of the tokens of ``a`` and of ``b``. One mean over the whole pair would be nearly
    blind to the order of the two texts, and both metrics need it: SIERA asks which side is simpler,
    REFEREE rates the output given its source. :meth:`forward` pools a single text over all its tokens.
    """

    def __init__(self, encoder: TextEncoder) -> None:
        super().__init__()
        self.encoder = encoder
        tokenizer = getattr(encoder, "tokenizer", None)
        self.sep = str(getattr(tokenizer, "sep_token", None) or "[SEP]")
        self.sep_id: int | None = getattr(tokenizer, "sep_token_id", None)

    @property
    def hidden_size(self) -> int:
        return self.encoder.hidden_size

    @property
    def pair_size(self) -> int:
        """Width of :meth:`pairs`' output."""
        return 3 * self.encoder.hidden_size

    def join(self, a: str, b: str) -> str:
        return f"{a} {self.sep} {b}"

    def device(self) -> torch.device:
        return next(self.parameters()).device

    def _top_states(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        encoded = {k: v.to(self.device()) for k, v in self.encoder.tokenize(list(texts)).items()}
        states = self.encoder.layer_states(encoded["input_ids"], encoded["attention_mask"])[-1]
        return states, encoded["input_ids"], encoded["attention_mask"].bool()

    @staticmethod
    def _mean(states: Tensor, mask: Tensor) -> Tensor:
        weights = mask.to(states.dtype)[:, :, None]
        return ((states * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)).to(torch.float32)

    def forward(self, texts: Sequence[str]) -> Tensor:
        states, _, mask = self._top_states(texts)
        return self._mean(states, mask)

    def pairs(self, pairs: Sequence[tuple[str, str]]) -> Tensor:
        states, ids, mask = self._top_states([self.join(a, b) for a, b in pairs])
        is_sep = ids == self.sep_id if self.sep_id is not None else torch.zeros_like(mask)
        positions = torch.arange(ids.shape[1], device=ids.device)[None, :]
        # the first separator splits the sides; without one (truncated away) everything is side a
        first = torch.where(is_sep.any(dim=1), is_sep.int().argmax(dim=1), ids.new_full((ids.shape[0],), ids.shape[1]))
        side_a = mask & ~is_sep & (positions < first[:, None])
        side_b = mask & ~is_sep & (positions > first[:, None])
        u, v = self._mean(states, side_a), self._mean(states, side_b)
        return torch.cat([u, v, u - v], dim=-1)

    def cut(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Whether each joined pair is longer than the encoder reads: the end of its second text is not read."""
        lengths = self.encoder.token_lengths([self.join(a, b) for a, b in pairs])
        return [n > self.encoder.max_length for n in lengths]

    def set_trainable_top_layers(self, n: int | None) -> None:
        """Freeze every encoder weight but the top ``n`` transformer layers (None: all trainable)."""
        self.encoder.set_trainable(True, n)


def length_batches(pairs: Sequence[tuple[str, str]], batch_size: int) -> list[list[int]]:
    """The indices of ``pairs`` in batches of similar length (characters of both sides), longest first.

    A batch is padded to its longest pair, so scoring pairs in their given order pads short pairs to long
    ones; scorers run these batches and put each result back at its index. Padding is masked out, so a pair's
    score does not depend on the batch it is in (up to float rounding).
    """
    order = sorted(range(len(pairs)), key=lambda i: -(len(pairs[i][0]) + len(pairs[i][1])))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def score_by_length(
    pairs: Sequence[tuple[str, str]], batch_size: int, score: Callable[[list[tuple[str, str]]], Sequence[float]]
) -> list[float]:
    """``score`` run on the :func:`length_batches` of ``pairs`` without gradients; one value per pair, in order."""
    out = [0.0] * len(pairs)
    with torch.inference_mode():
        for batch in length_batches(pairs, batch_size):
            for i, value in zip(batch, score([pairs[i] for i in batch]), strict=True):
                out[i] = value
    return out


class PairScorer(ABC):
    """A scorer of "complex [SEP] output" pairs (REFEREE, SIERA): :meth:`score` is the family's boundary."""

    @abstractmethod
    def predict(self, pairs: Sequence[tuple[str, str]], *, batch_size: int = 32) -> list[float]:
        """The metric's value per (complex, output) pair."""

    @abstractmethod
    def truncated(self, pairs: Sequence[tuple[str, str]]) -> list[bool]:
        """Whether each pair is longer than this version reads (its score misses the end of the output)."""

    def score(self, items: Sequence[Triple]) -> list[Scored]:
        """The value per item, with ``truncated`` (1 when "complex [SEP] output" is longer than the version
        reads, so the end of the output was not read)."""
        pairs = [(i.complex, i.output) for i in items]
        return [(float(v), {"truncated": float(cut)})
                for v, cut in zip(self.predict(pairs), self.truncated(pairs), strict=True)]
