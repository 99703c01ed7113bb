"""Monolingual word alignment between a source and an output.

Stages, each only over tokens left unaligned by the previous ones:

1. **copy anchors** — identical tokens under :func:`~annotation.analysis.text.match_key`
   (so case, quote and dash styles are ignored), aligned in order with
   ``difflib.SequenceMatcher`` (longest common blocks first, so repeated words are
   resolved by their context). Short blocks made only of stop words/punctuation
   that sit between two changed regions are dropped: they are coincidences of a
   rewrite ("is", "the"), not kept text.
2. **moved blocks** — identical runs containing a content word that appear in
   both texts but out of order (reorderings).
3. **lemma pairs** — content words with the same lemma inside the same gap
   between anchors ("began" / "begin").
4. **embedding pairs** — content words inside the same gap whose contextual
   MiniLM vectors are similar: mutual arg-max above a threshold (SimAlign's
   ArgMax), then one extra round letting a still-free token join its best partner
   (many-to-one), in the spirit of SimAlign's IterMax.

Only stage 1 anchors are "kept" text; every other pair is a change (paraphrase
or move) and only tells the edit builder which source text an output span replaces.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Literal

from .models import FloatArray
from .text import TextInfo, Token

PairKind = Literal["moved", "lemma", "embedding"]

EMBEDDING_THRESHOLD = 0.55
MAX_NOISE_BLOCK = 2


@dataclass(frozen=True)
class Pair:
    src: int
    out: int
    kind: PairKind
    score: float = 1.0
    group: int = -1  # moved-block id for ``moved`` pairs


@dataclass
class Alignment:
    """Token-index alignment. ``anchors`` are monotone (src, out) copies."""

    n_src: int
    n_out: int
    anchors: list[tuple[int, int]]
    pairs: list[Pair] = field(default_factory=list)

    def gaps(self) -> Iterator[tuple[range, range]]:
        """(source range, output range) between consecutive anchors, including the
        leading and trailing ones (possibly empty)."""
        prev_s, prev_o = -1, -1
        for s, o in [*self.anchors, (self.n_src, self.n_out)]:
            yield range(prev_s + 1, s), range(prev_o + 1, o)
            prev_s, prev_o = s, o

    def aligned_src(self) -> set[int]:
        return {s for s, _ in self.anchors} | {p.src for p in self.pairs}

    def aligned_out(self) -> set[int]:
        return {o for _, o in self.anchors} | {p.out for p in self.pairs}


def _blocks(src: tuple[Token, ...], out: tuple[Token, ...]) -> list[tuple[int, int, int]]:
    matcher = SequenceMatcher(None, [t.key for t in src], [t.key for t in out], autojunk=False)
    return [(b.a, b.b, b.size) for b in matcher.get_matching_blocks() if b.size]


def _drop_noise_blocks(
    blocks: list[tuple[int, int, int]], src: tuple[Token, ...], n_src: int, n_out: int
) -> list[tuple[int, int, int]]:
    changed = True
    while changed:
        changed = False
        for k, (a, b, size) in enumerate(blocks):
            if size > MAX_NOISE_BLOCK or any(src[a + d].is_content for d in range(size)):
                continue
            if k:
                prev_a, prev_b, prev_size = blocks[k - 1]
                pa, pb = prev_a + prev_size, prev_b + prev_size
            else:
                pa, pb = 0, 0
            na, nb = (blocks[k + 1][0], blocks[k + 1][1]) if k + 1 < len(blocks) else (n_src, n_out)
            before_changed = a > pa and b > pb
            after_changed = na > a + size and nb > b + size
            if before_changed and after_changed:
                del blocks[k]
                changed = True
                break
    return blocks


def _moved_blocks(
    src: tuple[Token, ...], out: tuple[Token, ...], free_s: set[int], free_o: set[int]
) -> list[Pair]:
    positions: dict[str, list[int]] = {}
    for j in sorted(free_o):
        positions.setdefault(out[j].key, []).append(j)
    pairs: list[Pair] = []
    group = 0
    n_src, n_out = max(len(src), 1), max(len(out), 1)
    while True:
        best: tuple[int, float, int, int] | None = None
        for i in sorted(free_s):
            for j in positions.get(src[i].key, []):
                if j not in free_o:
                    continue
                size = 0
                has_content = False
                while (
                    i + size in free_s
                    and j + size in free_o
                    and src[i + size].key == out[j + size].key
                ):
                    has_content = has_content or src[i + size].is_content
                    size += 1
                if not has_content:
                    continue
                drift = abs(i / n_src - j / n_out)
                cand = (size, -drift, -i, -j)
                if best is None or cand > best:
                    best = cand
        if best is None:
            return pairs
        size, _, i, j = best[0], best[1], -best[2], -best[3]
        for d in range(size):
            pairs.append(Pair(i + d, j + d, "moved", 1.0, group))
            free_s.discard(i + d)
            free_o.discard(j + d)
        group += 1


def lexical_alignment(src: TextInfo, out: TextInfo) -> Alignment:
    """Stages 1–3 (no model needed beyond the spaCy parse)."""
    s_tok, o_tok = src.tokens, out.tokens
    blocks = _drop_noise_blocks(_blocks(s_tok, o_tok), s_tok, len(s_tok), len(o_tok))
    anchors = [(a + d, b + d) for a, b, size in blocks for d in range(size)]
    alignment = Alignment(len(s_tok), len(o_tok), anchors)
    free_s = set(range(len(s_tok))) - {a for a, _ in anchors}
    free_o = set(range(len(o_tok))) - {b for _, b in anchors}
    alignment.pairs.extend(_moved_blocks(s_tok, o_tok, free_s, free_o))
    for s_range, o_range in alignment.gaps():
        for i in s_range:
            if i not in free_s or not s_tok[i].is_content:
                continue
            for j in o_range:
                if j in free_o and o_tok[j].is_content and o_tok[j].lemma == s_tok[i].lemma:
                    alignment.pairs.append(Pair(i, j, "lemma"))
                    free_s.discard(i)
                    free_o.discard(j)
                    break
    return alignment


def _gap_candidates(
    src: TextInfo, out: TextInfo, alignment: Alignment
) -> Iterator[tuple[list[int], list[int]]]:
    taken_s, taken_o = alignment.aligned_src(), alignment.aligned_out()
    for s_range, o_range in alignment.gaps():
        s_free = [i for i in s_range if i not in taken_s and src.tokens[i].is_content]
        o_free = [j for j in o_range if j not in taken_o and out.tokens[j].is_content]
        if s_free and o_free:
            yield s_free, o_free


def needs_embeddings(src: TextInfo, out: TextInfo, alignment: Alignment) -> bool:
    """Whether stage 4 could add anything (lets the engine skip the encoder)."""
    return next(_gap_candidates(src, out, alignment), None) is not None


def add_embedding_pairs(
    src: TextInfo,
    out: TextInfo,
    alignment: Alignment,
    src_vectors: FloatArray,
    out_vectors: FloatArray,
    threshold: float = EMBEDDING_THRESHOLD,
) -> Alignment:
    """Stage 4, in place; returns the same alignment for chaining."""
    for s_free, o_free in list(_gap_candidates(src, out, alignment)):
        sim = src_vectors[s_free] @ out_vectors[o_free].T
        best_o = sim.argmax(axis=1)
        best_s = sim.argmax(axis=0)
        used_s: set[int] = set()
        used_o: set[int] = set()
        for a, b in enumerate(best_o):
            if best_s[b] == a and sim[a, b] >= threshold:
                alignment.pairs.append(Pair(s_free[a], o_free[b], "embedding", float(sim[a, b])))
                used_s.add(a)
                used_o.add(int(b))
        for b in range(len(o_free)):
            a = int(best_s[b])
            if b not in used_o and a in used_s and sim[a, b] >= threshold:
                alignment.pairs.append(Pair(s_free[a], o_free[b], "embedding", float(sim[a, b])))
        for a in range(len(s_free)):
            b = int(best_o[a])
            if a not in used_s and b in used_o and sim[a, b] >= threshold:
                alignment.pairs.append(Pair(s_free[a], o_free[b], "embedding", float(sim[a, b])))
    alignment.pairs.sort(key=lambda p: (p.src, p.out))
    return alignment

