"""What the reference-free learned metrics (REFEREE, SIERA) share, free of Django.

* :class:`PairEncoder`: an offline encoder (``metrics.lens.encoders``) reading ``"a [SEP] b"`` as one text and
  returning the mean-pooled top-layer states of each side and their difference;
* checkpoint directories (``weights.safetensors`` + ``learned_config.json`` + ``encoder/``) rebuilt offline;
* the progress/cancel protocol of LENS training (:class:`Callback`, :class:`ProgressEvent`...), re-exported so
  the product's training service drives every learned metric the same way, and LENS's checkpoint selection
  (:func:`selection_key`, :func:`improves_on`), so every metric picks its best epoch by one rule, and its
  single-source batches with the within-source ranking term (:func:`make_batches`, :func:`pairwise_rank_loss`).
"""

from __future__ import annotations

import json
import math
import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from metrics.lens import Callback, HeldoutMetrics, ProgressEvent, TrainingCancelled, TrainResult
from metrics.lens.encoders import ENCODER_ASSETS_DIR, TextEncoder, encoder_class, resolve_encoder_path
from metrics.lens.loss import pairwise_rank_loss
from metrics.lens.training import SelectionKey, improves_on, make_batches, selection_key

__all__ = [
    "Callback",
    "HeldoutMetrics",
    "PairEncoder",
    "ProgressEvent",
    "SelectionKey",
    "TrainResult",
    "TrainingCancelled",
    "check_cancel",
    "emit",
    "improves_on",
    "length_batches",
    "load_encoder",
    "load_weights",
    "make_batches",
    "pairwise_rank_loss",
    "pearson",
    "read_checkpoint",
    "score_by_length",
    "seed_everything",
    "selection_key",
    "should_stop",
    "write_checkpoint",
]

CONFIG_FILE = "learned_config.json"


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


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


def write_checkpoint(
    directory: Path, *, modules: dict[str, nn.Module], encoder: TextEncoder, metadata: dict[str, Any]
) -> Path:
    """Write ``<name>.safetensors`` per module, the encoder's assets and the metadata, atomically."""
    from safetensors.torch import save_model

    directory = Path(directory)
    staging = directory.with_name(directory.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name, module in modules.items():
        save_model(module, str(staging / f"{name}.safetensors"))
    encoder.save_assets(staging / ENCODER_ASSETS_DIR)
    identity = {"name_or_path": metadata.get("encoder"), "resolved_path": _resolved(str(metadata.get("encoder"))),
                "hidden_size": encoder.hidden_size, "num_layers": encoder.num_layers,
                "max_length": encoder.max_length}
    (staging / CONFIG_FILE).write_text(json.dumps({**metadata, "encoder_identity": identity}, indent=2,
                                                  sort_keys=True) + "\n")
    shutil.rmtree(directory, ignore_errors=True)
    staging.rename(directory)
    return directory


def _resolved(name: str) -> str:
    try:
        return resolve_encoder_path(name)
    except (ImportError, FileNotFoundError):
        return name


def read_checkpoint(
    directory: Path, *, kind: str, max_length: int | None = None
) -> tuple[dict[str, Any], TextEncoder]:
    """The metadata of a ``kind`` checkpoint and its encoder architecture (untrained weights), offline.

    The encoder reads as many tokens as the version was trained with, or ``max_length`` when given (an
    experiment's override, e.g. to compare read lengths on one checkpoint; serving never passes it).
    """
    directory = Path(directory)
    metadata: dict[str, Any] = json.loads((directory / CONFIG_FILE).read_text())
    if metadata.get("kind") != kind:
        raise ValueError(f"{directory} is not a {kind} checkpoint (kind={metadata.get('kind')!r})")
    length = int(metadata["max_length"]) if max_length is None else max_length
    encoder = encoder_class("hf").from_assets(directory / ENCODER_ASSETS_DIR, max_length=length)
    return metadata, encoder


def load_weights(module: nn.Module, path: Path) -> None:
    from safetensors.torch import load_model

    missing, unexpected = load_model(module, str(path), strict=False, device="cpu")
    if missing or unexpected:
        raise ValueError(f"{path}: weights do not match (missing={missing}, unexpected={unexpected})")


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) < 2:
        return None
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.std() == 0 or b.std() == 0:
        return None
    value = float(np.corrcoef(a, b)[0, 1])
    return value if math.isfinite(value) else None


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


def emit(callbacks: Sequence[Callback], event: ProgressEvent) -> None:
    for callback in callbacks:
        callback.on_progress(event)


def check_cancel(callbacks: Sequence[Callback], *, epoch: int, step: int) -> None:
    if any(c.should_cancel() for c in callbacks):
        raise TrainingCancelled(epoch=epoch, step=step, best_checkpoint=None)


def should_stop(callbacks: Sequence[Callback]) -> bool:
    return any(c.should_stop() for c in callbacks)
