"""Flesch-Kincaid grade level with ``textstat==0.7.3``, the version the LENS paper used.

textstat 0.7.3 rounds the average sentence length and syllables per word to one decimal and the
grade to one decimal; it counts syllables with Pyphen's ``en_US`` dictionary, so it works offline
(later releases fetch NLTK's cmudict at run time).  It imports ``pkg_resources`` at module level (for
its Dale-Chall word lists, which FKGL never reads); setuptools 81+ no longer ships that module, so a
stand-in with the one function textstat calls is installed when the real one is missing.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import sys
import types
from collections.abc import Sequence
from functools import lru_cache
from importlib.metadata import version
from typing import IO, Any

from metrics.suite.base import Item, Metric, Score
from metrics.suite.registry import register
from metrics.suite.version import SUITE_VERSION

TEXTSTAT_VERSION = "0.7.3"


def _resource_stream(package: str, resource: str) -> IO[bytes]:
    return importlib.resources.files(package).joinpath(resource).open("rb")


@lru_cache(maxsize=1)
def _textstat() -> Any:
    if importlib.util.find_spec("pkg_resources") is None:
        stand_in = types.ModuleType("pkg_resources")
        stand_in.resource_stream = _resource_stream  # type: ignore[attr-defined]
        sys.modules["pkg_resources"] = stand_in
    installed = version("textstat")
    if installed != TEXTSTAT_VERSION:
        raise RuntimeError(f"fkgl needs textstat=={TEXTSTAT_VERSION} (the LENS paper's), found {installed}")
    import textstat

    return textstat.textstat


def flesch_kincaid_grade(text: str) -> float:
    """textstat 0.7.3's ``flesch_kincaid_grade(text)``."""
    return float(_textstat().flesch_kincaid_grade(text))


@register("fkgl")
class Fkgl(Metric):
    """Flesch-Kincaid grade level of the output (textstat 0.7.3); lower is simpler.

    The LENS paper correlates the grade itself with the ratings (so FKGL's correlations are negative);
    ``higher_is_better`` is False for ranking systems by it.
    """

    name = "fkgl"
    needs_references = False
    higher_is_better = False

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        if options:
            raise TypeError(f"fkgl takes no options, got {sorted(options)}")

    @property
    def signature(self) -> str:
        return f"fkgl:textstat-{TEXTSTAT_VERSION}|syll:pyphen-{version('pyphen')}|round:0.1|version:{SUITE_VERSION}"

    def _score(self, items: Sequence[Item]) -> list[Score]:
        cache: dict[str, float] = {}
        out: list[Score] = []
        for item in items:
            value = cache.get(item.output)
            if value is None:
                value = cache[item.output] = flesch_kincaid_grade(item.output)
            out.append(Score(value=value))
        return out
