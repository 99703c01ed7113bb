"""Sanity checks of a metric (MeaningBERT's, Beauchemin et al. 2023), per source of the testbed, without Django.

Three outputs are added to each sampled source and scored with everything else:

* ``identical_to_source``: the source sentence itself; it must get the metric's **best** score.
* ``identical_to_reference``: one of the references the metric is given, word for word; **best** score.
* ``unrelated``: a reference of another source (a sentence about something else); **worst** score.

"Best" and "worst" are relative to the source's *comparison outputs*, the five LENS Figure 2 systems of the
same source (Copy, Drop 10%, Scramble 5%, Split, Human: plausible outputs from a copy to a human
simplification), in the metric's own direction (``higher_is_better``).  A comparison output whose text is the
candidate's own is the same output and is left out (Copy is the source).  On one source a candidate passes
"best" when ``score >= max(others) - tol`` (``<= min(others) + tol`` for a lower-is-better metric) and "worst"
when ``score <= min(others) + tol`` (mirrored likewise), where ``tol = tolerance x`` the spread of the
source's scores (candidate and comparison outputs; 0 when they are all equal, so ties pass).  A
non-finite score fails.  A metric passes a check when every source passes it.

The checks test meaning preservation: a simplification metric that rewards change (SARI, FKGL) is expected to
fail ``identical_to_source`` (a copy is no simplification), and a reference-free metric ``identical_to_reference``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

SANITY_CHECKS: dict[str, dict[str, str]] = {
    "identical_to_source": {"want": "best", "heading": "Identical to source",
                            "label": "identical to its source gets the best score"},
    "identical_to_reference": {"want": "best", "heading": "Identical to reference",
                               "label": "identical to a reference gets the best score"},
    "unrelated": {"want": "worst", "heading": "Unrelated", "label": "an unrelated sentence gets the worst score"},
}
"""Each check: what its candidate must get (``best``/``worst``), its column heading and what it says, in the
order shown."""

SANITY_TOLERANCE = 0.01
"""The slack of a check, as a share of the spread of one source's scores (1%)."""


def sanity_candidates(source: str, references: Sequence[str], unrelated: str | None) -> dict[str, str]:
    """The candidate output of each check for one source: ``references`` are those the metric is given
    (the first is copied); ``unrelated`` is a sentence of another source (``None``: that check is left out)."""
    out: dict[str, str] = {"identical_to_source": source}
    if references:
        out["identical_to_reference"] = references[0]
    if unrelated is not None and unrelated.strip() and unrelated != source and unrelated not in references:
        out["unrelated"] = unrelated
    return out


def sanity_passes(
    score: float, others: Sequence[float], *, want: str, higher_is_better: bool, tolerance: float = SANITY_TOLERANCE
) -> bool:
    """Whether ``score`` is the best (``want="best"``) or the worst (``"worst"``) of ``score`` and ``others``
    in the metric's direction, within ``tolerance`` x the spread (see the module docstring)."""
    if want not in ("best", "worst"):
        raise ValueError(f"want must be 'best' or 'worst', got {want!r}")
    if not math.isfinite(score):
        return False
    finite = [v for v in others if math.isfinite(v)]
    if not finite:
        return True
    spread = max([score, *finite]) - min([score, *finite])
    tol = tolerance * spread
    top = (want == "best") == higher_is_better  # the candidate must be at the top of the numbers
    return score >= max(finite) - tol if top else score <= min(finite) + tol


def sanity_evaluate(
    sources: Sequence[Mapping[str, Any]], *, higher_is_better: bool, tolerance: float = SANITY_TOLERANCE
) -> dict[str, dict[str, Any]]:
    """Every check over every source.

    Args:
        sources: Per source ``{"candidates": {check: score}, "others": {text: score}, "texts": {check: text}}``:
            the candidates' scores, the comparison outputs' scores by text, and the candidates' texts (a
            comparison output with the candidate's text is left out).

    Returns:
        Per check, in :data:`SANITY_CHECKS`' order: ``{"want", "label", "passed", "total", "passes",
        "failed_sources"}`` (``passes``: every source passed, and there was one; ``failed_sources``: the
        positions in ``sources`` of the failures, at most 20).
    """
    out: dict[str, dict[str, Any]] = {}
    for check, spec in SANITY_CHECKS.items():
        passed = total = 0
        failed: list[int] = []
        for position, entry in enumerate(sources):
            if check not in entry["candidates"]:
                continue
            text = entry["texts"].get(check)
            others = [v for t, v in entry["others"].items() if t != text]
            total += 1
            if sanity_passes(entry["candidates"][check], others, want=spec["want"],
                             higher_is_better=higher_is_better, tolerance=tolerance):
                passed += 1
            elif len(failed) < 20:
                failed.append(position)
        out[check] = {"want": spec["want"], "label": spec["label"], "passed": passed, "total": total,
                      "passes": total > 0 and passed == total, "failed_sources": failed}
    return out


def sanity_text(report: Mapping[str, Mapping[str, Any]] | None) -> str:
    """A metric's checks in a line: ``"identical to source 6/6 pass, identical to reference 5/6 FAIL, ..."``."""
    if not report:
        return "no sanity checks yet"
    parts = []
    for check in SANITY_CHECKS:
        cell = report.get(check)
        if cell is None or not cell["total"]:
            continue
        verdict = "pass" if cell["passes"] else "FAIL"
        parts.append(f"{check.replace('_', ' ')} {cell['passed']}/{cell['total']} {verdict}")
    return ", ".join(parts) or "no sanity checks yet"


def sanity_table(by_metric: Mapping[str, Mapping[str, Mapping[str, Any]] | None]) -> dict[str, Any]:
    """The checks of several metrics as a table: ``{"checks": [{"check", "label", "want"}], "rows":
    [{"metric", "cells": [cell or None per check], "text"}]}`` (a metric without checks has ``None`` cells)."""
    checks = [{"check": check, **spec} for check, spec in SANITY_CHECKS.items()]
    rows = []
    for metric, report in by_metric.items():
        cells = [dict(report[check], check=check) if report and check in report else None for check in SANITY_CHECKS]
        rows.append({"metric": metric, "cells": cells, "text": sanity_text(report)})
    return {"checks": checks, "rows": rows}
