"""``build_edits`` pinned on hand-written sentence pairs (lexical alignment, no encoder needed).

Written before ``build_edits`` was split into steps, so the split is proven to keep its output.
Edits are shown as (type, source text, output text, text before the anchor) for readability.
"""

from __future__ import annotations

from annotation.analysis.alignment import Alignment, Pair, lexical_alignment
from annotation.analysis.edits import build_edits, rebuild_tokens
from annotation.analysis.models import get_nlp
from annotation.analysis.text import TextInfo, Token, match_key, text_info
from annotation.analysis.types import Edit

Readable = tuple[str, str | None, str | None, str | None]


def readable(source: str, output: str, edits: list[Edit]) -> list[Readable]:
    def cut(text: str, span: tuple[int, int] | None) -> str | None:
        return None if span is None else text[span[0] : span[1]]

    return [
        (e.type, cut(source, e.source_span), cut(output, e.output_span),
         None if e.anchor is None else output[: e.anchor][-12:])
        for e in edits
    ]


def edits_of(source: str, output: str) -> list[Readable]:
    nlp = get_nlp()
    src, out = text_info(nlp(source)), text_info(nlp(output))
    edits = build_edits(src, out, lexical_alignment(src, out))
    assert rebuild_tokens(src.tokens, out.tokens, edits) == [t.key for t in out.tokens]
    return readable(source, output, edits)


PAIRS: list[tuple[str, str]] = [
    ("The old man walked slowly to the market.", "The man walked to the market."),
    ("The committee postponed the vote until Friday.", "The committee delayed the vote until Friday."),
    ("Yesterday the cat sat on the mat.", "The cat sat on the mat yesterday."),
    ("He left early because he was tired and it was raining.", "He left early. He was tired and it was raining."),
    ("The big red dog barked at the small cat in the garden.", "In the garden, the big dog barked at the cat."),
    ("She bought apples, pears and plums at the market.", "At the market she bought plums and pears."),
    ("The results were published in 2004 by the institute.", "The institute published the results in 2004."),
    ("Scientists discovered a new species of frog in the rainforest last year.",
     "Last year, a new frog was found in the rainforest by scientists."),
    ("The film, which was released in May, received good reviews.",
     "The film came out in May. It received good reviews."),
    ("The cat sat.", "A dog ran quickly to the park."),
]

EXPECTED: list[list[Readable]] = [
    [
        ('deletion', 'old', None, 'The'),
        ('deletion', 'slowly', None, 'e man walked'),
    ],
    [
        ('paraphrase', 'postponed', 'delayed', None),
    ],
    [
        ('deletion', 'Yesterday', None, ''),
        ('paraphrase', 'Yesterday', 'yesterday', None),
    ],
    [
        ('paraphrase', 'because', '.', None),
        ('split', None, None, ' left early.'),
    ],
    [
        ('paraphrase', 'in the garden', 'In the garden', None),
        ('paraphrase', None, ',', None),
        ('deletion', 'red', None, 'den, the big'),
        ('deletion', 'small', None, 'arked at the'),
        ('deletion', 'in the garden', None, 'd at the cat'),
    ],
    [
        ('deletion', 'She bought apples, pears and plums', None, ''),
        ('paraphrase', 'She bought', 'she bought', None),
        ('paraphrase', 'plums', 'plums', None),
        ('paraphrase', None, 'and', None),
        ('paraphrase', 'pears', 'pears', None),
    ],
    [
        ('paraphrase', 'the institute', 'The institute', None),
        ('paraphrase', 'published', 'published', None),
        ('deletion', 'were published', None, ' the results'),
        ('deletion', 'by the institute', None, 'ults in 2004'),
    ],
    [
        ('deletion', 'Scientists', None, ''),
        ('paraphrase', 'last year', 'Last year', None),
        ('paraphrase', 'discovered', ',', None),
        ('deletion', 'species of', None, ' year, a new'),
        ('paraphrase', None, 'was found', None),
        ('deletion', 'last year', None, 'e rainforest'),
        ('paraphrase', None, 'by', None),
        ('paraphrase', 'Scientists', 'scientists', None),
    ],
    [
        ('paraphrase', ', which was released in May,', 'came out in May. It', None),
        ('split', None, None, ' out in May.'),
    ],
    [
        ('paraphrase', None, 'A dog ran quickly to', None),
        ('paraphrase', 'cat sat', 'park', None),
    ],
]


def test_edits_of_hand_written_pairs() -> None:
    assert [edits_of(s, o) for s, o in PAIRS] == EXPECTED


def _info(text: str) -> TextInfo:
    """Whitespace tokens, one sentence per "|"-separated part, every word a content word."""
    tokens: list[Token] = []
    offset = 0
    for sent, part in enumerate(text.split(" | ")):
        for word in part.split():
            start = text.index(word, offset)
            offset = start + len(word)
            tokens.append(Token(word, start, offset, match_key(word), match_key(word), False, False, sent))
    return TextInfo(text, tuple(tokens), sent + 1, sent + 1, 1)


def test_edits_of_a_hand_built_alignment() -> None:
    """Two moved blocks and local text in one gap, an embedding pair, and a split."""
    source = "a b c d e f g h"
    output = "a x f g y b c z | h"
    src, out = _info(source), _info(output)
    alignment = Alignment(
        len(src.tokens), len(out.tokens), anchors=[(0, 0), (7, 8)],
        pairs=[Pair(5, 2, "moved", group=0), Pair(6, 3, "moved", group=0), Pair(1, 5, "moved", group=1),
               Pair(2, 6, "moved", group=1), Pair(3, 4, "embedding", 0.8)],
    )
    assert readable(source, output, build_edits(src, out, alignment)) == [
        ("deletion", "b c", None, "a"),
        ("paraphrase", None, "x", None),
        ("paraphrase", "f g", "f g", None),
        ("paraphrase", "d", "y", None),
        ("paraphrase", "b c", "b c", None),
        ("paraphrase", None, "z", None),
        ("deletion", "e f g", None, " f g y b c z"),
        ("split", None, None, " f g y b c z"),
    ]
