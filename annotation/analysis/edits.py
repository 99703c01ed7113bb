"""Turn a word alignment into highlighted edits, and rebuild an output from them.

Representation (documented contract, relied on by :func:`rebuild_tokens`):

* Source tokens inside any ``deletion`` span or any ``paraphrase`` ``source_span``
  are removed (a union: a moved word's old place is both a deletion and the
  ``source_span`` of the paraphrase at its new place).
* Output tokens inside ``paraphrase`` ``output_span`` s are inserted; every other
  output token is kept source text, in source order.
* ``split`` edits only mark boundaries; the added full stop is part of a
  paraphrase span (or of kept text when the source had one there).
* Casing, Unicode form, quote and dash styles are not edits (tokens are compared
  under :func:`~annotation.analysis.text.match_key`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

from .alignment import Alignment, Pair
from .text import TextInfo, Token
from .types import Edit


def _anchor_at(tokens: Sequence[Token], j: int) -> int:
    """Output offset for a caret placed before output token ``j``: right after the
    previous token, or at the first token when ``j`` is 0."""
    if j > 0:
        return tokens[j - 1].end
    return tokens[0].start if tokens else 0


def _char_span(tokens: Sequence[Token], first: int, last: int) -> tuple[int, int]:
    return (tokens[first].start, tokens[last].end)


def _runs(indices: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for i in sorted(indices):
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    return runs


@dataclass(frozen=True)
class Moved:
    """Output text that is a block moved from elsewhere in the source (the ``group`` of its moved pairs)."""

    group: int


@dataclass(frozen=True)
class Local:
    """Output text written in place of the source text of its own gap."""


Origin: TypeAlias = Moved | Local
"""Where a run of output tokens in a gap comes from."""


@dataclass
class _Segment:
    """A maximal run of output tokens of one gap with the same origin."""

    origin: Origin
    outs: list[int]


class _PairIndex:
    """The non-anchor pairs of an alignment, looked up by output token, by source token and by moved block."""

    def __init__(self, alignment: Alignment) -> None:
        self.by_out: dict[int, list[Pair]] = {}
        self.by_src: dict[int, list[Pair]] = {}
        self.moved_blocks: dict[int, list[int]] = {}  # group -> its source tokens
        for pair in alignment.pairs:
            self.by_out.setdefault(pair.out, []).append(pair)
            self.by_src.setdefault(pair.src, []).append(pair)
            if pair.kind == "moved":
                self.moved_blocks.setdefault(pair.group, []).append(pair.src)

    def origin(self, j: int) -> Origin:
        moved = [p for p in self.by_out.get(j, []) if p.kind == "moved"]
        return Moved(moved[0].group) if moved else Local()


def build_edits(src: TextInfo, out: TextInfo, alignment: Alignment) -> list[Edit]:
    """Deletion, paraphrase and split edits from an alignment, sorted."""
    index = _PairIndex(alignment)
    edits: list[Edit] = []
    for s_range, o_range in alignment.gaps():
        edits.extend(_gap_edits(src.tokens, out.tokens, index, s_range, o_range))
    edits.extend(_split_edits(src, out, alignment))
    return sorted(set(edits), key=Edit.sort_key)


def _segments(index: _PairIndex, o_range: range) -> list[_Segment]:
    """The output gap (contiguous) cut into runs by origin: a moved block or local text."""
    segments: list[_Segment] = []
    for j in o_range:
        origin = index.origin(j)
        if segments and segments[-1].origin == origin:
            segments[-1].outs.append(j)
        else:
            segments.append(_Segment(origin, [j]))
    return segments


def _gap_edits(
    s_tok: Sequence[Token], o_tok: Sequence[Token], index: _PairIndex, s_range: range, o_range: range
) -> list[Edit]:
    """One paraphrase per output segment of the gap, then deletions for the source text none of them replaces."""
    segments = _segments(index, o_range)
    single_local = sum(isinstance(seg.origin, Local) for seg in segments) == 1
    edits: list[Edit] = []
    replaced: list[tuple[int, int]] = []  # source tokens (first, last) replaced in place by local segments
    for segment in segments:
        if isinstance(segment.origin, Moved):
            block = sorted(index.moved_blocks[segment.origin.group])
            source: tuple[int, int] | None = (block[0], block[-1])
        else:
            source = _replaced_source(index, segment.outs, s_range, single_local)
            if source is not None:
                replaced.append(source)
        edits.append(Edit(
            "paraphrase",
            source_span=None if source is None else _char_span(s_tok, *source),
            output_span=_char_span(o_tok, segment.outs[0], segment.outs[-1]),
        ))
    edits.extend(_deletions(s_tok, o_tok, s_range, o_range, replaced))
    return edits


def _deletions(
    s_tok: Sequence[Token], o_tok: Sequence[Token], s_range: range, o_range: range,
    replaced: Sequence[tuple[int, int]],
) -> list[Edit]:
    """Runs of the gap's source tokens that no local segment replaces.

    The caret goes before the gap's output for a run that precedes the first replaced token (or when nothing
    was replaced), after it otherwise.
    """
    covered = {i for lo, hi in replaced for i in range(lo, hi + 1)}
    first_replaced = min((lo for lo, _ in replaced), default=None)
    edits: list[Edit] = []
    for lo, hi in _runs([i for i in s_range if i not in covered]):
        before = first_replaced is None or lo < first_replaced
        j = o_range.start if before else o_range.stop
        edits.append(Edit("deletion", source_span=_char_span(s_tok, lo, hi), anchor=_anchor_at(o_tok, j)))
    return edits


def _replaced_source(
    index: _PairIndex, outs: Sequence[int], s_range: range, single_local: bool
) -> tuple[int, int] | None:
    """First and last source token that a local segment replaces, or None for a pure insertion.

    Its partners inside the gap when it has any; otherwise, when it is the gap's only local segment, every
    source token of the gap that is not paired at all (so neither moved away nor paired elsewhere).
    """
    s_set = set(s_range)
    partners = sorted(p.src for j in outs for p in index.by_out.get(j, []) if p.src in s_set)
    if not partners and single_local:
        partners = [i for i in s_range if not index.by_src.get(i)]
    return (partners[0], partners[-1]) if partners else None


def _split_edits(src: TextInfo, out: TextInfo, alignment: Alignment) -> list[Edit]:
    s_tok, o_tok = src.tokens, out.tokens
    partner: dict[int, set[int]] = {}
    for s, o in alignment.anchors:
        partner.setdefault(o, set()).add(s)
    for pair in alignment.pairs:
        partner.setdefault(pair.out, set()).add(pair.src)

    # Only inner source boundaries count: text appended after the source's last
    # sentence (or before its first) is a new boundary.
    def ends_sentence(i: int) -> bool:
        return i + 1 < len(s_tok) and s_tok[i + 1].sent != s_tok[i].sent

    def starts_sentence(i: int) -> bool:
        return i > 0 and s_tok[i - 1].sent != s_tok[i].sent

    edits: list[Edit] = []
    for j in range(len(o_tok) - 1):
        if o_tok[j].sent == o_tok[j + 1].sent:
            continue
        existing = any(ends_sentence(i) for i in partner.get(j, ())) or any(
            starts_sentence(i) for i in partner.get(j + 1, ())
        )
        if not existing:
            edits.append(Edit("split", anchor=o_tok[j].end))
    return edits


def _inside(token: Token, span: tuple[int, int]) -> bool:
    return span[0] <= token.start and token.end <= span[1]


def rebuild_tokens(
    source_tokens: Sequence[Token], output_tokens: Sequence[Token], edits: Sequence[Edit]
) -> list[str]:
    """Apply ``edits`` to the source tokens and return the rebuilt token keys.

    Kept tokens come from the source; only paraphrase spans are read from the
    output (plus, for each, how many kept tokens precede it). The result equals
    ``[t.key for t in output_tokens]`` exactly when the edits are faithful.
    """
    removed_spans = [
        e.source_span
        for e in edits
        if e.source_span is not None and e.type in ("deletion", "paraphrase")
    ]
    inserted_spans = sorted(
        e.output_span for e in edits if e.type == "paraphrase" and e.output_span is not None
    )
    kept = [t.key for t in source_tokens if not any(_inside(t, sp) for sp in removed_spans)]
    inserted_at: dict[int, list[str]] = {}
    kept_before = 0
    for tok in output_tokens:
        span = next((sp for sp in inserted_spans if _inside(tok, sp)), None)
        if span is None:
            kept_before += 1
        else:
            inserted_at.setdefault(kept_before, []).append(tok.key)
    rebuilt: list[str] = []
    for k in range(len(kept) + 1):
        rebuilt.extend(inserted_at.get(k, []))
        if k < len(kept):
            rebuilt.append(kept[k])
    return rebuilt
