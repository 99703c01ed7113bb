"""Text-analysis engine for Rank & Rate (no Django imports).

Categorises simplification outputs (split / deletion / paraphrase, LENS §6.1),
aligns their words with the source, derives highlighted edits and computes the
ASSET text features. Models (spaCy, MiniLM) load lazily, once per process.

Importing the package is cheap: the version facts, types and categorisation rules are read at once, the
engine (numpy, rapidfuzz) on first use of one of its names, so the Django apps that only read stored
analyses do not load it at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# `categorize` is both a module and its function: imported here (it is light), so the name is the function.
from .categorize import DEFAULT_RULE, RULES, Rule, categorize
from .types import Analysis, Category, Edit, EditType
from .version import DEGRADED_SUFFIX, ENGINE_VERSION, is_degraded_version

if TYPE_CHECKING:
    from .engine import analyze, analyze_many, apply_edits, token_keys, tokenize

_ENGINE_NAMES = frozenset({"analyze", "analyze_many", "apply_edits", "token_keys", "tokenize"})


def __getattr__(name: str) -> Any:
    if name not in _ENGINE_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(".engine", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_RULE",
    "DEGRADED_SUFFIX",
    "ENGINE_VERSION",
    "RULES",
    "Analysis",
    "Category",
    "Edit",
    "EditType",
    "Rule",
    "analyze",
    "analyze_many",
    "apply_edits",
    "categorize",
    "is_degraded_version",
    "token_keys",
    "tokenize",
]
