"""Token records extracted once from a spaCy ``Doc`` and the matching key."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.tokens import Doc

_CHAR_MAP = str.maketrans(
    {
        "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'",
        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"',
        "\u00bb": '"', "\u2033": '"', "\u2010": "-", "\u2011": "-", "\u2012": "-",
        "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-", "\u2026": "...",
    }
)
_TERMINAL = {".", "!", "?", "...", ";"}
_CLOSERS = {'"', "'", ")", "]", "}"}
_WORD_RE = re.compile(r"\w", re.UNICODE)


def match_key(text: str) -> str:
    """Key under which two tokens count as identical: case, Unicode form, quote and
    dash styles are ignored (so casing/quote-only changes are not edits)."""
    return unicodedata.normalize("NFKC", text).translate(_CHAR_MAP).casefold()


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int
    key: str
    lemma: str
    is_punct: bool
    is_stop: bool
    sent: int

    @property
    def is_word(self) -> bool:
        return not self.is_punct

    @property
    def is_content(self) -> bool:
        return not self.is_punct and not self.is_stop


@dataclass(frozen=True)
class TextInfo:
    """Everything the engine needs about one text, computed once per distinct text."""

    text: str
    tokens: tuple[Token, ...]
    n_sentences: int
    raw_sentences: int
    tree_depth: int


def _is_punct(text: str) -> bool:
    return _WORD_RE.search(text) is None


def _valid_boundary(prev: list[str], nxt: str) -> bool:
    """spaCy sometimes splits inside quotes or after abbreviations; a boundary only
    counts when the previous sentence ends in terminal punctuation (optionally
    followed by closing quotes/brackets) and the next one does not start lowercase."""
    idx = len(prev) - 1
    while idx >= 0 and match_key(prev[idx]) in _CLOSERS:
        idx -= 1
    if idx < 0 or match_key(prev[idx]) not in _TERMINAL:
        return False
    first = next((ch for ch in nxt if ch.isalpha()), "")
    return not (first and first.islower())


def _depth(token_heads: dict[int, int], i: int) -> int:
    depth = 0
    seen: set[int] = set()
    while token_heads[i] != i and i not in seen:
        seen.add(i)
        i = token_heads[i]
        depth += 1
    return depth


def text_info(doc: Doc) -> TextInfo:
    """Build the token records of a parsed text (whitespace tokens are dropped)."""
    tokens: list[Token] = []
    sent_index = -1
    raw_sentences = 0
    prev_texts: list[str] = []
    heads: dict[int, int] = {}
    max_depth = 0
    for sent in doc.sents:
        words = [t for t in sent if not t.is_space]
        if not words:
            continue
        raw_sentences += 1
        first_word = next((t.text for t in words if not _is_punct(t.text)), words[0].text)
        if sent_index < 0 or _valid_boundary(prev_texts, first_word):
            sent_index += 1
        prev_texts = [t.text for t in words]
        for t in sent:
            heads[t.i] = t.head.i
        for t in words:
            tokens.append(
                Token(
                    text=t.text,
                    start=t.idx,
                    end=t.idx + len(t.text),
                    key=match_key(t.text),
                    lemma=match_key(t.lemma_ or t.text),
                    is_punct=_is_punct(t.text),
                    is_stop=bool(t.is_stop),
                    sent=sent_index,
                )
            )
    for i in heads:
        max_depth = max(max_depth, _depth(heads, i))
    return TextInfo(
        text=doc.text,
        tokens=tuple(tokens),
        n_sentences=sent_index + 1,
        raw_sentences=raw_sentences,
        tree_depth=max_depth + 1 if tokens else 0,
    )
