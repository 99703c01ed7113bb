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


def build_edits(src: TextInfo, out: TextInfo, alignment: Alignment) -> list[Edit]:
    """Deletion, paraphrase and split edits from an alignment, sorted."""
    s_tok, o_tok = src.tokens, out.tokens
    by_out: dict[int, list[Pair]] = {}
    by_src: dict[int, list[Pair]] = {}
    for pair in alignment.pairs:
        by_out.setdefault(pair.out, []).append(pair)
        by_src.setdefault(pair.src, []).append(pair)
    moved_src: dict[int, list[int]] = {}
    for pair in alignment.pairs:
        if pair.kind == "moved":
            moved_src.setdefault(pair.group, []).append(pair.src)

    edits: list[Edit] = []
    for s_range, o_range in alignment.gaps():
        # Segment the (contiguous) output gap by origin: a moved block or local text.
        segments: list[tuple[str, list[int]]] = []
        for j in o_range:
            moved = [p for p in by_out.get(j, []) if p.kind == "moved"]
            origin = f"moved:{moved[0].group}" if moved else "local"
            if segments and segments[-1][0] == origin:
                segments[-1][1].append(j)
            else:
                segments.append((origin, [j]))
        s_set = set(s_range)
        moved_out = {i for i in s_range if any(p.kind == "moved" for p in by_src.get(i, []))}
        local_segments = [seg for seg in segments if seg[0] == "local"]
        covered: set[int] = set()
        first_local_src: int | None = None
        for origin, outs in segments:
            out_span = _char_span(o_tok, outs[0], outs[-1])
            if origin.startswith("moved:"):
                group_src = sorted(moved_src[int(origin.split(":")[1])])
                src_span: tuple[int, int] | None = _char_span(s_tok, group_src[0], group_src[-1])
            else:
                partners = sorted(
                    p.src for j in outs for p in by_out.get(j, []) if p.src in s_set
                )
                if not partners and len(local_segments) == 1:
                    partners = [
                        i for i in s_range if i not in moved_out and not by_src.get(i)
                    ]
                if partners:
                    lo, hi = partners[0], partners[-1]
                    covered.update(range(lo, hi + 1))
                    first_local_src = lo if first_local_src is None else min(first_local_src, lo)
                    src_span = _char_span(s_tok, lo, hi)
                else:
                    src_span = None
            edits.append(Edit("paraphrase", source_span=src_span, output_span=out_span))
        for lo, hi in _runs([i for i in s_range if i not in covered]):
            before = first_local_src is None or lo < first_local_src
            j = o_range.start if before else o_range.stop
            edits.append(
                Edit("deletion", source_span=_char_span(s_tok, lo, hi), anchor=_anchor_at(o_tok, j))
            )
    edits.extend(_split_edits(src, out, alignment))
    return sorted(set(edits), key=Edit.sort_key)


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
