"""Text-analysis engine for Rank & Rate (no Django imports).

Categorises simplification outputs (split / deletion / paraphrase, LENS §6.1),
aligns their words with the source, derives highlighted edits and computes the
ASSET text features. Models (spaCy, MiniLM) load lazily, once per process.
"""

from .categorize import DEFAULT_RULE, RULES, Rule, categorize
from .engine import (
    DEGRADED_SUFFIX,
    ENGINE_VERSION,
    analyze,
    analyze_many,
    apply_edits,
    is_degraded_version,
    token_keys,
    tokenize,
)
from .types import Analysis, Category, Edit, EditType

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
