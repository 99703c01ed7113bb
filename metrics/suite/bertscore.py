"""BERTScore (Zhang et al., 2020): greedy matching of contextual token embeddings, on a local encoder.

The definition is that of the ``bert-score`` package (0.3.x) with ``idf=False``: each text is encoded
once (special tokens included), token vectors of one hidden layer are L2-normalised, precision is the
mean over the output's tokens of their best cosine with any token of the reference, recall the same
the other way round, F1 their harmonic mean; [CLS]/[SEP] (``<s>``/``</s>``) carry zero weight but can
be matched.  It is implemented here on ``transformers`` rather than by calling ``bert-score`` because
that package resolves models and layers through its own name table, and pulls in pandas and
matplotlib; the encoder is always loaded from local files (``local_files_only``), never downloaded.

With several references each of P, R and F1 is its maximum over the references (as the LENS authors'
evaluation code takes the maximum of the one it reports).  ``self-bertscore`` compares the output with
its complex sentence instead.  The LENS authors lowercase every text first (``case:lower``).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from metrics.lens.config import DEFAULT_ENCODER
from metrics.lens.encoders import resolve_encoder_path
from metrics.suite.base import Item, Metric, MetricError, Score
from metrics.suite.registry import register
from metrics.suite.version import SUITE_VERSION

KNOWN_LAYERS: dict[str, int] = {
    # bert-score's choices (best WMT16 layer) for the encoders one is likely to have locally.
    "roberta-large": 17,
    "roberta-base": 10,
    "bert-base-uncased": 9,
    "bert-large-uncased": 18,
    "distilbert-base-uncased": 5,
    "distilroberta-base": 5,
    "deberta-large-mnli": 18,
    # The bundled sentence-transformers MiniLM (6 layers): bert-score's rule for 6-layer distilled
    # encoders (distilbert, distilroberta) is the fifth layer.
    DEFAULT_ENCODER: 5,
    "all-MiniLM-L6-v2": 5,
}

_PREFIX_SPACE_FAMILIES = frozenset({"roberta", "gpt2", "longformer", "bart"})

COMPONENTS = ("P", "R", "F1")
_VARIANT_COMPONENT = {None: "F1", "f1": "F1", "precision": "P", "recall": "R"}


def default_layer(model: str) -> int:
    """The hidden layer used for ``model`` when none is given."""
    for key in (model, Path(model.rstrip("/")).name):
        if key in KNOWN_LAYERS:
            return KNOWN_LAYERS[key]
    raise MetricError(f"no default BERTScore layer for {model!r}: pass layer=N (known: {sorted(KNOWN_LAYERS)})")


@dataclass(frozen=True)
class _Encoded:
    vectors: Tensor  # [tokens, hidden], L2-normalised
    weights: Tensor  # [tokens], 1 for ordinary tokens, 0 for [CLS]/[SEP]


CACHE_BYTES = 256 * 2**20
"""What a matcher's encoded texts may hold between calls (their token vectors and weights): a worker serving
the suite for hours would otherwise keep every text it ever scored. The texts of the call in hand are kept
whatever their size until it has scored them; the least recently used are dropped past the bound."""


class GreedyMatcher:
    """A local encoder cut at one layer, with a bounded per-text embedding cache (least recently used texts
    dropped past ``cache_bytes``) and batched greedy matching."""

    def __init__(self, model: str, layer: int, *, device: str = "cpu", batch_size: int = 64,
                 cache_bytes: int = CACHE_BYTES) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        path = resolve_encoder_path(model)
        config: Any = AutoConfig.from_pretrained(path, local_files_only=True)
        extra = {"add_prefix_space": True} if config.model_type in _PREFIX_SPACE_FAMILIES else {}
        self.tokenizer: Any = AutoTokenizer.from_pretrained(path, local_files_only=True, **extra)
        encoder: Any = AutoModel.from_pretrained(path, local_files_only=True)
        total = int(config.num_hidden_layers)
        if not 1 <= layer <= total:
            raise MetricError(f"layer must be between 1 and {total} for {model!r}, got {layer}")
        stack = getattr(getattr(encoder, "encoder", None), "layer", None)
        if not isinstance(stack, torch.nn.ModuleList):
            raise MetricError(f"{model!r}: BERTScore here supports BERT-style encoders (encoder.layer)")
        encoder.encoder.layer = torch.nn.ModuleList(list(stack)[:layer])  # skip layers never used
        self.model = encoder.eval().to(device)
        self.layer = layer
        self.device = device
        self.batch_size = batch_size
        self.max_length = int(min(getattr(self.tokenizer, "model_max_length", 512), 512))
        specials = {self.tokenizer.cls_token_id, self.tokenizer.sep_token_id}
        self._zero_weight = {token for token in specials if token is not None}
        self.cache_bytes = cache_bytes
        self._cache: OrderedDict[str, _Encoded] = OrderedDict()  # least recently used first
        self._cached_bytes = 0

    def clear(self) -> None:
        """Forget the encoded texts (for cold-start timings; the cache is otherwise kept for reuse)."""
        self._cache.clear()
        self._cached_bytes = 0

    @property
    def cached_bytes(self) -> int:
        """What the encoded texts held now take (token vectors and weights)."""
        return self._cached_bytes

    def encode(self, texts: Iterable[str]) -> None:
        """Encode the texts not cached yet, in batches of similar length, then drop the least recently used
        texts of earlier calls while the cache holds more than ``cache_bytes``."""
        wanted = set(texts)
        for text in wanted & self._cache.keys():
            self._cache.move_to_end(text)
        todo = sorted(t for t in wanted if t not in self._cache)
        if todo:
            self._encode(todo)
        self.trim(keep=wanted)

    def trim(self, keep: Iterable[str] = ()) -> None:
        """Drop the least recently used texts, except ``keep``, while the cache holds more than
        ``cache_bytes``; :meth:`encode` keeps its own texts, and the metric trims once it has scored."""
        kept = set(keep)
        while self._cached_bytes > self.cache_bytes and self._cache:
            oldest = next(iter(self._cache))
            if oldest in kept:  # everything left is to be kept: the recently used come last
                break
            self._cached_bytes -= _size(self._cache.pop(oldest))

    def _encode(self, todo: list[str]) -> None:
        ids: list[list[int]] = [
            self.tokenizer.encode(text.strip(), add_special_tokens=True, truncation=True, max_length=self.max_length)
            for text in todo
        ]
        order = sorted(range(len(todo)), key=lambda k: len(ids[k]))
        pad = int(self.tokenizer.pad_token_id or 0)
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                chunk = order[start : start + self.batch_size]
                width = max(len(ids[k]) for k in chunk)
                input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for row, k in enumerate(chunk):
                    input_ids[row, : len(ids[k])] = torch.tensor(ids[k])
                    mask[row, : len(ids[k])] = 1
                output = self.model(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device))
                # The encoder was cut after ``layer`` blocks, so its last state is that layer's output.
                states = torch.nn.functional.normalize(output.last_hidden_state.float(), dim=-1).cpu()
                for row, k in enumerate(chunk):
                    n = len(ids[k])
                    weights = torch.tensor([0.0 if t in self._zero_weight else 1.0 for t in ids[k]])
                    encoded = _Encoded(vectors=states[row, :n].clone(), weights=weights)
                    self._cache[todo[k]] = encoded
                    self._cached_bytes += _size(encoded)

    def _stack(self, texts: Sequence[str]) -> tuple[Tensor, Tensor, Tensor]:
        """Padded vectors ``[n, tokens, hidden]``, validity mask and weights of encoded texts."""
        encoded = [self._cache[text] for text in texts]
        width = max(e.vectors.shape[0] for e in encoded)
        hidden = encoded[0].vectors.shape[1]
        vectors = torch.zeros((len(encoded), width, hidden))
        valid = torch.zeros((len(encoded), width), dtype=torch.bool)
        weights = torch.zeros((len(encoded), width))
        for row, e in enumerate(encoded):
            n = e.vectors.shape[0]
            vectors[row, :n] = e.vectors
            valid[row, :n] = True
            weights[row, :n] = e.weights
        return vectors, valid, weights

    def score_many(self, candidates: Sequence[str], references: Sequence[str]) -> list[dict[str, float]]:
        """P, R, F1 of each candidate against the same references, each maximised over the references.

        All candidates of one reference set are matched in one tensor operation.
        """
        self.encode([*candidates, *references])
        hyp, hyp_valid, hyp_weights = self._stack(candidates)
        ref, ref_valid, ref_weights = self._stack(references)
        with torch.inference_mode():
            sim = torch.einsum("chd,nrd->cnhr", hyp, ref)  # [candidates, refs, hyp tokens, ref tokens]
            sim = sim.masked_fill(~ref_valid[None, :, None, :], float("-inf"))
            sim = sim.masked_fill(~hyp_valid[:, None, :, None], float("-inf"))
            best_for_hyp = sim.max(dim=3).values.masked_fill(~hyp_valid[:, None, :], 0.0)  # [c, n, h]
            best_for_ref = sim.max(dim=2).values.masked_fill(~ref_valid[None, :, :], 0.0)  # [c, n, r]
            precision = _weighted_mean(best_for_hyp, hyp_weights[:, None, :])  # [c, n]
            recall = _weighted_mean(best_for_ref, ref_weights[None, :, :])
            f1 = torch.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
            p_max, r_max, f_max = precision.max(dim=1).values, recall.max(dim=1).values, f1.max(dim=1).values
        return [
            {"P": float(p), "R": float(r), "F1": float(f)}
            for p, r, f in zip(p_max.tolist(), r_max.tolist(), f_max.tolist(), strict=True)
        ]

    def score(self, candidate: str, references: Sequence[str]) -> dict[str, float]:
        """P, R, F1 of ``candidate`` against each reference, each maximised over the references."""
        return self.score_many([candidate], references)[0]


def _size(encoded: _Encoded) -> int:
    return sum(t.element_size() * t.nelement() for t in (encoded.vectors, encoded.weights))


def _weighted_mean(values: Tensor, weights: Tensor) -> Tensor:
    total = weights.sum(dim=-1)
    return torch.where(total > 0, (values * weights).sum(dim=-1) / total.clamp(min=1e-12), 0.0)


@lru_cache(maxsize=4)
def _matcher(model: str, layer: int, device: str, batch_size: int) -> GreedyMatcher:
    return GreedyMatcher(model, layer, device=device, batch_size=batch_size)


class _BertScoreBase(Metric):
    family = "bertscore"
    against = "refs"

    def __init__(
        self,
        variant: str | None = None,
        *,
        model: str = DEFAULT_ENCODER,
        layer: int | None = None,
        lowercase: bool = True,
        device: str = "cpu",
        batch_size: int | None = None,
    ) -> None:
        self.component = _VARIANT_COMPONENT[variant]
        self.name = self.family if variant is None else f"{self.family}:{variant}"
        self.model_name = model
        self.layer = default_layer(model) if layer is None else int(layer)
        self.lowercase = lowercase
        self.device = device
        # Small batches of similar length are fastest on CPU (docs/performance.md).
        self.batch_size = batch_size or (16 if device == "cpu" else 64)

    @property
    def matcher(self) -> GreedyMatcher:
        return _matcher(self.model_name, self.layer, self.device, self.batch_size)

    @property
    def signature(self) -> str:
        import transformers

        model = Path(self.model_name.rstrip("/")).name
        case = "lower" if self.lowercase else "mixed"
        refs = "complex" if self.against == "complex" else "max-each"
        return (
            f"{self.family}:greedy|model:{model}|layer:{self.layer}|idf:no|case:{case}|refs:{refs}"
            f"|score:{self.component}|transformers:{transformers.__version__}|version:{SUITE_VERSION}"
        )

    def _prepare(self, text: str) -> str:
        return text.lower() if self.lowercase else text

    def _targets(self, item: Item) -> list[str]:
        return [self._prepare(ref) for ref in item.references]

    def _score(self, items: Sequence[Item]) -> list[Score]:
        matcher = self.matcher
        texts = {self._prepare(item.output) for item in items}
        for item in items:
            texts.update(self._targets(item))
        matcher.encode(texts)
        groups: dict[tuple[str, ...], list[str]] = {}
        for item in items:
            candidates = groups.setdefault(tuple(self._targets(item)), [])
            candidates.append(self._prepare(item.output))
        parts: dict[tuple[tuple[str, ...], str], dict[str, float]] = {}
        for targets, candidates in groups.items():
            unique = list(dict.fromkeys(candidates))
            for candidate, result in zip(unique, matcher.score_many(unique, targets), strict=True):
                parts[(targets, candidate)] = result
        out: list[Score] = []
        for item in items:
            result = parts[(tuple(self._targets(item)), self._prepare(item.output))]
            out.append(Score(value=result[self.component], components=result))
        matcher.trim()
        return out


@register("bertscore", variants=("precision", "recall", "f1"))
class BertScore(_BertScoreBase):
    """BERTScore P/R/F1 against the references (value: F1, or the variant's component)."""

    needs_references = True
    higher_is_better = True


@register("self-bertscore", variants=("precision", "recall", "f1"))
class SelfBertScore(_BertScoreBase):
    """BERTScore P/R/F1 of the output against its complex sentence (no references needed)."""

    family = "self-bertscore"
    against = "complex"
    needs_references = False
    needs_complex = True
    higher_is_better = True

    def _targets(self, item: Item) -> list[str]:
        return [self._prepare(item.complex)]
