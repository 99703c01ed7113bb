"""SIERA's training pairs and the "+Silver" augmentation.

A pair ``(first, second, label)`` reads "first [SEP] second"; ``label`` is 1 when ``second`` is the simpler
of the two. Every (source, reference) pair of the corpus gives both orders. The augmentation splits the
token-level edit script between a source and its reference into edits (``difflib`` opcodes over
whitespace tokens) and applies subsets of them to the source: the result lies between the two ends, so
it is simpler than the source and more complex than the reference. Candidates are kept when their
similarity to both ends is above the mean over the candidates: the paper filters with BERTScore F1
(:func:`bertscore_f1`, the suite's BERTScore); :func:`token_f1` is a lexical stand-in that needs no encoder.
"""

from __future__ import annotations

import difflib
import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from metrics.siera.config import SILVER_FILTERS

Pair = tuple[str, str, int]
Similarity = Callable[[Sequence[tuple[str, str]]], list[float]]


@dataclass(frozen=True)
class Edit:
    """Replace ``source_tokens[i1:i2]`` by ``target_tokens[j1:j2]``."""

    i1: int
    i2: int
    j1: int
    j2: int


def token_edits(source: str, target: str) -> tuple[list[str], list[str], list[Edit]]:
    a, b = source.split(), target.split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    edits = [Edit(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    return a, b, edits


def apply_edits(a: Sequence[str], b: Sequence[str], edits: Sequence[Edit]) -> str:
    """``a`` with the chosen ``edits`` applied (they do not overlap: they come from one edit script)."""
    out: list[str] = []
    position = 0
    for edit in sorted(edits, key=lambda e: e.i1):
        out.extend(a[position:edit.i1])
        out.extend(b[edit.j1:edit.j2])
        position = edit.i2
    out.extend(a[position:])
    return " ".join(out)


def intermediates(source: str, target: str, *, limit: int, rng: random.Random) -> list[str]:
    """Up to ``limit`` distinct sentences made by applying a proper, non-empty subset of the edits."""
    a, b, edits = token_edits(source, target)
    if len(edits) < 2:
        return []
    ends = {" ".join(a), " ".join(b)}
    if len(edits) <= 10:
        subsets = [list(c) for r in range(1, len(edits)) for c in itertools.combinations(edits, r)]
        rng.shuffle(subsets)
    else:
        subsets = [rng.sample(edits, rng.randrange(1, len(edits))) for _ in range(4 * limit)]
    out: list[str] = []
    for subset in subsets:
        text = apply_edits(a, b, subset)
        if text not in ends and text not in out:
            out.append(text)
        if len(out) >= limit:
            break
    return out


def token_f1(pairs: Sequence[tuple[str, str]]) -> list[float]:
    """Bag-of-tokens F1 (a lexical stand-in for BERTScore F1)."""
    from collections import Counter

    out: list[float] = []
    for x, y in pairs:
        cx, cy = Counter(x.lower().split()), Counter(y.lower().split())
        common = sum((cx & cy).values())
        if not common:
            out.append(0.0)
            continue
        p, r = common / sum(cx.values()), common / sum(cy.values())
        out.append(2 * p * r / (p + r))
    return out


BERTSCORE_CHUNK = 1024
"""Pairs scored at a time by :func:`bertscore_f1`: the matcher holds all the texts of the call in hand,
and the default corpus makes some 100,000 candidate texts (gigabytes held at once)."""


def bertscore_f1(*, device: str = "cpu") -> Similarity:
    """BERTScore F1 of each (candidate, reference) pair: the metric suite's ``bertscore`` (the bundled
    encoder at its BERTScore layer), loaded at the first call; ``BERTSCORE_CHUNK`` pairs at a time."""

    def similarity(pairs: Sequence[tuple[str, str]]) -> list[float]:
        from metrics.suite import Item
        from metrics.suite.bertscore import BertScore

        metric = BertScore(device=device)
        out: list[float] = []
        for start in range(0, len(pairs), BERTSCORE_CHUNK):
            items = [Item(complex="", output=x, references=(y,)) for x, y in pairs[start:start + BERTSCORE_CHUNK]]
            out += [float(score.value) for score in metric.score_batch(items, allow_empty=True)]
            metric.matcher.clear()
        return out

    return similarity


def silver_similarity(name: str, *, device: str = "cpu") -> Similarity:
    """The similarity a ``silver_filter`` option names (``SILVER_FILTERS``)."""
    if name == "token_f1":
        return token_f1
    if name == "bertscore":
        return bertscore_f1(device=device)
    raise ValueError(f"unknown silver filter {name!r}; known: {', '.join(SILVER_FILTERS)}")


def silver_pairs(
    pairs: Sequence[tuple[str, str]], *, per_pair: int, rng: random.Random, similarity: Similarity = token_f1
) -> list[tuple[str, str, str]]:
    """``(source, intermediate, reference)`` triples kept by the similarity filter."""
    candidates = [(s, m, r) for s, r in pairs for m in intermediates(s, r, limit=per_pair, rng=rng)]
    if not candidates:
        return []
    to_source = similarity([(m, s) for s, m, _ in candidates])
    to_reference = similarity([(m, r) for _, m, r in candidates])
    mean_s = sum(to_source) / len(to_source)
    mean_r = sum(to_reference) / len(to_reference)
    return [c for c, x, y in zip(candidates, to_source, to_reference, strict=True) if x > mean_s and y > mean_r]


def both_orders(simpler_second: Sequence[tuple[str, str]]) -> list[Pair]:
    """``(complex, simple)`` -> ``(complex, simple, 1)`` and ``(simple, complex, 0)``."""
    out: list[Pair] = []
    for hard, easy in simpler_second:
        out += [(hard, easy, 1), (easy, hard, 0)]
    return out


def training_pairs(
    rows: Sequence[tuple[str, str, Sequence[str]]], *, max_pairs: int, silver: bool, per_pair: int, seed: int,
    similarity: Similarity = token_f1,
) -> dict[str, list[Pair]]:
    """Labelled pairs per source id from (source id, complex, references) rows (see the module docstring)."""
    rng = random.Random(seed)
    flat = [(sid, c, r) for sid, c, refs in rows for r in refs if r.strip() and r.strip() != c.strip()]
    if len(flat) > max_pairs:
        flat = rng.sample(flat, max_pairs)
    by_source: dict[str, list[Pair]] = {}
    for sid, c, r in flat:
        by_source.setdefault(sid, []).extend(both_orders([(c, r)]))
    if silver:
        owner = {(c, r): sid for sid, c, r in flat}
        kept = silver_pairs([(c, r) for _, c, r in flat], per_pair=per_pair, rng=rng, similarity=similarity)
        for s, m, r in kept:
            by_source[owner[(s, r)]].extend(both_orders([(s, m), (m, r)]))
    return by_source


def rated_pairs(rows: Sequence[tuple[str, str, str, float]]) -> dict[str, list[Pair]]:
    """Pairs labelled by human simplicity ratings, as the SIERA paper's Table 5 trains on Simplicity-DA.

    ``rows`` are (source id, complex, output, simplicity rating). An output rated below the mean rating
    of all the rows counts as less simple than its complex sentence, otherwise as simpler; outputs of one
    source are also paired with each other, the higher-rated one the simpler (equal ratings and identical
    texts give no pair). Every pair is taken in both orders.
    """
    if not rows:
        return {}
    mean = sum(r for *_, r in rows) / len(rows)
    by_source: dict[str, list[Pair]] = {}
    grouped: dict[str, list[tuple[str, float]]] = {}
    for sid, complex_text, output, rating in rows:
        if output.strip() == complex_text.strip():
            continue
        ordered = (complex_text, output) if rating >= mean else (output, complex_text)
        by_source.setdefault(sid, []).extend(both_orders([ordered]))
        grouped.setdefault(sid, []).append((output, rating))
    for sid, outputs in grouped.items():
        for (a, ra), (b, rb) in itertools.combinations(outputs, 2):
            if ra == rb or a.strip() == b.strip():
                continue
            by_source[sid].extend(both_orders([(a, b) if rb > ra else (b, a)]))
    return by_source
