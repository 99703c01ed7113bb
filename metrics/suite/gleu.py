"""Sentence GLEU (Wu et al., 2016) as NLTK's ``sentence_gleu``: the LENS paper's "BLEU" row.

The LENS authors' evaluation code (``metrics/bleu.py``) lowercases, tokenises with NLTK's
``word_tokenize`` and scores with a copy of NLTK's ``sentence_gleu``: for each reference, the matched
1-4-gram count over ``max(output n-grams, reference n-grams)``; the reference with the highest ratio
gives the score (0-1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from metrics.suite.base import Item, Metric, Score
from metrics.suite.registry import register
from metrics.suite.tokenize import nltk_word_tokenize
from metrics.suite.version import SUITE_VERSION


@lru_cache(maxsize=1 << 16)
def _everygrams(text: str, max_order: int) -> tuple[Counter[tuple[str, ...]], int]:
    tokens = nltk_word_tokenize(text.lower())
    grams: Counter[tuple[str, ...]] = Counter(
        tuple(tokens[i : i + n]) for n in range(1, max_order + 1) for i in range(len(tokens) - n + 1)
    )
    return grams, sum(grams.values())


def sentence_gleu(output: str, references: Sequence[str], *, max_order: int = 4) -> tuple[float, int]:
    """GLEU of ``output`` against its best reference.

    Returns:
        The score and the index of the reference that gave it (-1 when no reference has n-grams).
    """
    hyp, hyp_total = _everygrams(output, max_order)
    best, best_ref = 0.0, -1
    for j, ref_text in enumerate(references):
        ref, ref_total = _everygrams(ref_text, max_order)
        n_all = max(hyp_total, ref_total)
        if n_all == 0:
            continue
        matched = sum((hyp & ref).values()) if len(hyp) <= len(ref) else sum((ref & hyp).values())
        ratio = matched / n_all
        if best_ref < 0 or ratio > best:
            best, best_ref = ratio, j
    return best, best_ref


@register("gleu")
class Gleu(Metric):
    """NLTK-style sentence GLEU against the best reference (lowercased, NLTK word tokens), 0-1."""

    name = "gleu"
    needs_references = True
    higher_is_better = True

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        if options:
            raise TypeError(f"gleu takes no options, got {sorted(options)}")

    @property
    def signature(self) -> str:
        return f"gleu:nltk|case:lower|tok:nltk-punkt|ngram:1-4|refs:best|version:{SUITE_VERSION}"

    def _score(self, items: Sequence[Item]) -> list[Score]:
        memo: dict[tuple[str, tuple[str, ...]], Score] = {}
        out: list[Score] = []
        for item in items:
            key = (item.output, item.references)
            if key not in memo:
                value, best = sentence_gleu(item.output, item.references)
                memo[key] = Score(value=value, components={"best_reference": float(best)})
            out.append(memo[key])
        return out
