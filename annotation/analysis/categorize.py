"""Split / deletion / paraphrase grouping of outputs (LENS §6.1, Step 1).

Two rules are available:

* ``"paper"`` — exactly LENS: more sentences than the source → split; compression
  ratio below the threshold, or made only by deleting words → deletion; else
  paraphrase.
* ``"refined"`` — the paper rule plus the case annotators consistently moved
  (SimpEval_2022 final groups): an output that *mostly* deletes — compression ratio
  below ``MOSTLY_COMPRESSION``, at least ``MOSTLY_DELETED`` of the source words
  without a counterpart and at most ``MOSTLY_ADDED`` of its own words new — is
  deletion-focused even when it rewords a little (a short full rewrite is not).
  The constants were picked on SimpEval_2022's final groups; docs/metrics.md gives
  each rule's agreement with the annotators (``benchmarks/bench_analysis.py``).

In both, "made only by deleting words" needs at least one deleted word, so an
output identical to its source is paraphrase-focused (nothing was deleted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .types import Category

Rule = Literal["paper", "refined"]
RULES: tuple[Rule, ...] = ("paper", "refined")
DEFAULT_RULE: Rule = "refined"

MOSTLY_DELETED = 0.35
MOSTLY_ADDED = 0.4
MOSTLY_COMPRESSION = 0.7


def categorize(
    features: Mapping[str, float | int | bool],
    *,
    compression_threshold: float = 0.5,
    rule: Rule = DEFAULT_RULE,
) -> tuple[Category, dict[str, Any]]:
    """Return the category and the reasons behind it (for the interface to show).

    Args:
        features: output of :func:`~annotation.analysis.features.compute_features`.
        compression_threshold: compression ratio below which an output is
            deletion-focused (LENS uses 0.5).
        rule: ``"paper"`` or ``"refined"`` (see module docstring).

    Returns:
        ``(category, reasons)``; ``reasons["rule"]`` names the clause that fired.
    """
    if rule not in RULES:
        raise ValueError(f"unknown categorisation rule: {rule!r}")
    ratio = float(features["compression_ratio"])
    src_sents = int(features["source_sentences"])
    out_sents = int(features["output_sentences"])
    only_deleted = bool(features["deletion_only"])
    deleted = float(features["proportion_deleted"])
    added = float(features["proportion_added"])
    reasons: dict[str, Any] = {
        "compression_ratio": round(ratio, 4),
        "threshold": compression_threshold,
        "source_sentences": src_sents,
        "output_sentences": out_sents,
        "deletion_only": only_deleted,
        "proportion_deleted": round(deleted, 4),
        "proportion_added": round(added, 4),
        "rule_set": rule,
    }
    category: Category
    if out_sents > src_sents:
        category, reasons["rule"] = "split", "output has more sentences than the source"
    elif ratio < compression_threshold:
        category, reasons["rule"] = "deletion", "compression ratio below the threshold"
    elif only_deleted:
        category, reasons["rule"] = "deletion", "output made only by deleting words"
    elif (
        rule == "refined"
        and deleted >= MOSTLY_DELETED
        and added <= MOSTLY_ADDED
        and ratio < MOSTLY_COMPRESSION
    ):
        category = "deletion"
        reasons["rule"] = (
            f"mostly deletion: compression ratio below {MOSTLY_COMPRESSION} and "
            f"at least {MOSTLY_DELETED:.0%} of source words dropped, "
            f"at most {MOSTLY_ADDED:.0%} of output words new"
        )
    else:
        category, reasons["rule"] = "paraphrase", "neither split nor deletion"
    return category, reasons
