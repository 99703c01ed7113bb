"""ASSET text features (Alva-Manchego et al. 2020, §4.1) for one source/output pair.

* ``compression_ratio`` — characters of output / characters of source.
* ``sentence_splits`` — output sentences minus source sentences.
* ``levenshtein_similarity`` — normalised character Levenshtein similarity (0–1).
* ``replace_only_levenshtein`` — character *replace* operations of an optimal edit
  script divided by ``min(len(source), len(output))``.
* ``proportion_deleted`` / ``proportion_reordered`` — source words (punctuation
  excluded) with no alignment / aligned out of order, over source words;
  ``proportion_added`` — output words with no alignment, over output words.
* ``exact_match`` — the texts are identical (surrounding whitespace ignored).
* ``deletion_only`` — the output's words are a proper subsequence of the source's
  words (under the matching key; punctuation ignored), i.e. made only by deleting.
* ``lexical_complexity_ratio`` — complexity(output) / complexity(source), where
  complexity is the third quartile of ``log(1 + rank)`` of the content words, rank
  taken from ``wordfreq``'s 50,000 most frequent English words (words outside get
  rank 50,001). This follows tseval (used by ASSET); the ASSET paper's prose says
  "mean squared log-ranks", the code takes the 0.75 quantile — we follow the code.
  A text without content words scores 0; the ratio is 1.0 when the source scores 0.
* ``dependency_depth_ratio`` — max dependency-tree depth of the output's sentences
  over that of the source (1.0 when the source has no tokens).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from rapidfuzz.distance import Levenshtein

from .alignment import Alignment
from .text import TextInfo

VOCAB_SIZE = 50_000


@lru_cache(maxsize=1)
def _word_ranks() -> dict[str, int]:
    from wordfreq import top_n_list

    return {word: rank for rank, word in enumerate(top_n_list("en", VOCAB_SIZE), start=1)}


def lexical_complexity(info: TextInfo) -> float:
    ranks = _word_ranks()
    logs = [
        math.log(1 + ranks.get(t.key, VOCAB_SIZE + 1))
        for t in info.tokens
        if t.is_content and any(ch.isalpha() for ch in t.text)
    ]
    if not logs:
        return 0.0
    return float(np.quantile(logs, 0.75))


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 1.0


def is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(word in it for word in small)


def deletion_only(src: TextInfo, out: TextInfo) -> bool:
    s_words = [t.key for t in src.tokens if t.is_word]
    o_words = [t.key for t in out.tokens if t.is_word]
    return bool(o_words) and len(o_words) < len(s_words) and is_subsequence(o_words, s_words)


def replace_only_levenshtein(source: str, output: str) -> float:
    shortest = min(len(source), len(output))
    if shortest == 0:
        return 0.0
    replaces = sum(1 for op in Levenshtein.editops(source, output) if op.tag == "replace")
    return replaces / shortest


def compute_features(
    src: TextInfo, out: TextInfo, alignment: Alignment
) -> dict[str, float | int | bool]:
    source, output = src.text.strip(), out.text.strip()
    s_words = [i for i, t in enumerate(src.tokens) if t.is_word]
    o_words = [j for j, t in enumerate(out.tokens) if t.is_word]
    aligned_s, aligned_o = alignment.aligned_src(), alignment.aligned_out()
    moved_s = {p.src for p in alignment.pairs if p.kind == "moved"}
    src_complexity = lexical_complexity(src)
    out_complexity = lexical_complexity(out)
    return {
        "compression_ratio": _ratio(len(output), len(source)),
        "source_sentences": src.n_sentences,
        "output_sentences": out.n_sentences,
        "sentence_splits": out.n_sentences - src.n_sentences,
        "levenshtein_similarity": float(Levenshtein.normalized_similarity(source, output)),
        "replace_only_levenshtein": replace_only_levenshtein(source, output),
        "proportion_deleted": _ratio(sum(i not in aligned_s for i in s_words), len(s_words))
        if s_words
        else 0.0,
        "proportion_added": _ratio(sum(j not in aligned_o for j in o_words), len(o_words))
        if o_words
        else 0.0,
        "proportion_reordered": _ratio(sum(i in moved_s for i in s_words), len(s_words))
        if s_words
        else 0.0,
        "exact_match": source == output,
        "deletion_only": deletion_only(src, out),
        "source_words": len(s_words),
        "output_words": len(o_words),
        "lexical_complexity_source": src_complexity,
        "lexical_complexity_output": out_complexity,
        "lexical_complexity_ratio": _ratio(out_complexity, src_complexity),
        "dependency_depth_source": src.tree_depth,
        "dependency_depth_output": out.tree_depth,
        "dependency_depth_ratio": _ratio(out.tree_depth, src.tree_depth),
    }
