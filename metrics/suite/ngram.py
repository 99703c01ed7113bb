"""An interpolated Kneser-Ney trigram language model in plain Python (POMME's offline default).

Chen & Goodman's interpolated Kneser-Ney with one discount per order: the highest order uses counts,
the lower orders continuation counts (how many distinct words precede an n-gram), and the unigram level
is interpolated with a uniform distribution over the vocabulary plus one unknown word, so every token
has a probability.  Texts are lowercased NLTK word tokens, padded with ``<s> <s>`` and ended by
``</s>``.  Only the trigram counts are stored (``save``/``load``, gzipped JSON); the rest is derived.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from metrics.suite.tokenize import nltk_word_tokenize

BOS, EOS = "<s>", "</s>"
DISCOUNT = 0.75


def lm_tokens(text: str) -> list[str]:
    """``<s> <s>`` + lowercased NLTK tokens + ``</s>``."""
    return [BOS, BOS, *(t.lower() for t in nltk_word_tokenize(text)), EOS]


class KneserNeyLM:
    """Interpolated Kneser-Ney trigram model built from trigram counts."""

    order = 3

    def __init__(self, trigrams: Counter[tuple[str, str, str]], *, discount: float = DISCOUNT) -> None:
        self.discount = discount
        self.trigrams = trigrams
        d = discount
        # Highest order: c(uv.) and N1+(uv.)
        self._ctx2_total: Counter[tuple[str, str]] = Counter()
        self._ctx2_types: Counter[tuple[str, str]] = Counter()
        # Middle order: N1+(.vw), N1+(.v.), N1+(v.) over the continuation counts
        self._cont2: Counter[tuple[str, str]] = Counter()
        for (u, v, w), count in trigrams.items():
            self._ctx2_total[(u, v)] += count
            self._ctx2_types[(u, v)] += 1
            self._cont2[(v, w)] += 1
        self._ctx1_total: Counter[str] = Counter()
        self._ctx1_types: Counter[str] = Counter()
        self._cont1: Counter[str] = Counter()
        for (v, w) in self._cont2:
            self._ctx1_total[v] += self._cont2[(v, w)]
            self._ctx1_types[v] += 1
            self._cont1[w] += 1
        self._cont1_total = sum(self._cont1.values())
        self.vocabulary = {w for (_, _, w) in trigrams} | {BOS}
        self._uniform = 1.0 / (len(self.vocabulary) + 1)  # + the unknown word
        self._unigram_lambda = d * len(self._cont1) / self._cont1_total if self._cont1_total else 1.0

    @classmethod
    def fit(cls, texts: Iterable[str], *, discount: float = DISCOUNT) -> KneserNeyLM:
        counts: Counter[tuple[str, str, str]] = Counter()
        for text in texts:
            tokens = lm_tokens(text)
            counts.update(zip(tokens, tokens[1:], tokens[2:], strict=False))
        if not counts:
            raise ValueError("no training text")
        return cls(counts, discount=discount)

    def _p1(self, w: str) -> float:
        d = self.discount
        seen = max(self._cont1.get(w, 0) - d, 0.0) / self._cont1_total if self._cont1_total else 0.0
        return seen + self._unigram_lambda * self._uniform

    def _p2(self, v: str, w: str) -> float:
        total = self._ctx1_total.get(v, 0)
        if not total:
            return self._p1(w)
        d = self.discount
        return max(self._cont2.get((v, w), 0) - d, 0.0) / total + d * self._ctx1_types[v] / total * self._p1(w)

    def prob(self, u: str, v: str, w: str) -> float:
        """P(w | u v)."""
        total = self._ctx2_total.get((u, v), 0)
        if not total:
            return self._p2(v, w)
        d = self.discount
        seen = max(self.trigrams.get((u, v, w), 0) - d, 0.0) / total
        return seen + d * self._ctx2_types[(u, v)] / total * self._p2(v, w)

    def log_perplexity(self, text: str) -> float:
        """Mean negative natural-log probability per predicted token (``</s>`` included)."""
        tokens = lm_tokens(text)
        logs = [math.log(self.prob(u, v, w)) for u, v, w in zip(tokens, tokens[1:], tokens[2:], strict=False)]
        return -sum(logs) / len(logs)

    def log_perplexities(self, texts: Sequence[str]) -> list[float]:
        return [self.log_perplexity(text) for text in texts]

    def save(self, path: Path) -> None:
        grouped: dict[str, dict[str, int]] = defaultdict(dict)
        for (u, v, w), count in self.trigrams.items():
            grouped[f"{u} {v}"][w] = count
        payload = {"format": "kn-trigram-counts/1", "discount": self.discount, "counts": grouped}
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            json.dump(payload, handle, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def load(cls, path: Path) -> KneserNeyLM:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            payload = json.load(handle)
        if payload.get("format") != "kn-trigram-counts/1":
            raise ValueError(f"{path}: not a Kneser-Ney count file")
        counts: Counter[tuple[str, str, str]] = Counter()
        for context, following in payload["counts"].items():
            u, v = context.split(" ")
            for w, count in following.items():
                counts[(u, v, w)] = int(count)
        return cls(counts, discount=float(payload["discount"]))
