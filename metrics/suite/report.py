"""The metrics-vs-humans comparison of several metrics on one rating set, as data and as tables.

:func:`compare_metrics` gives, per metric, the tau-like per category (Rank & Rate ratings) or Pearson
and Spearman per aspect (multi-aspect ratings), each with a 95% bootstrap interval, and for every pair
of metrics the paired bootstrap test (Deutsch et al., 2021) of the difference on the headline
column (``all`` or each aspect).  :func:`render` prints it as a terminal table, CSV or LaTeX.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, Literal

from annotation.rules import TAU_THRESHOLD
from core.csvsafe import csv_writer
from metrics.suite.datasets import RatedOutput
from metrics.suite.meta import aspect_pearson, compare_pearson, compare_tau, tau_like, tau_pairs

TAU_COLUMNS = ("paraphrase", "split", "deletion", "all")
Format = Literal["text", "csv", "latex"]


def compare_metrics(
    outputs: Sequence[RatedOutput],
    scores: Mapping[str, Sequence[float]],
    *,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    threshold: float = TAU_THRESHOLD,
) -> dict[str, Any]:
    """Every metric against the humans, and every pair of metrics against each other.

    Args:
        outputs: The rated outputs (with ``ratings`` and categories, or ``aspects``).
        scores: Metric name -> one score per output, in the order of ``outputs``.
        alpha: Level at which a paired difference is called significant.
        threshold: Rating gap (0-100) below which raters count as tied (tau-like only).

    Returns:
        ``{"kind": "kendall"|"pearson", "columns": [...], "metrics": {name: {column: cell}},
        "paired": [{"metric_a", "metric_b", "column", "value_a", "value_b", "difference", "ci_low",
        "ci_high", "p_value", "n_boot", "significant"}]}``.
    """
    aspects = sorted({a for out in outputs for a in out.aspects})
    paired: list[dict[str, Any]] = []
    table: dict[str, dict[str, Any]] = {}
    if aspects:
        for name, values in scores.items():
            table[name] = aspect_pearson(outputs, values, n_boot=n_boot, seed=seed)
        for a, b in combinations(scores, 2):
            for aspect in aspects:
                test = compare_pearson(outputs, scores[a], scores[b], aspect=aspect, n_boot=n_boot, seed=seed)
                paired.append(_pair(a, b, aspect, test.to_dict(), alpha))
        return {"kind": "pearson", "columns": aspects, "metrics": table, "paired": paired}
    pairs = tau_pairs(outputs, threshold=threshold)
    for name, values in scores.items():
        table[name] = tau_like(outputs, values, n_boot=n_boot, seed=seed, pairs=pairs)
    for a, b in combinations(scores, 2):
        test = compare_tau(outputs, scores[a], scores[b], key="all", n_boot=n_boot, seed=seed, pairs=pairs)
        paired.append(_pair(a, b, "all", test.to_dict(), alpha))
    columns = [c for c in TAU_COLUMNS if any(c in cells for cells in table.values())]
    return {"kind": "kendall", "columns": columns, "metrics": table, "paired": paired}


def _pair(a: str, b: str, column: str, test: dict[str, Any], alpha: float) -> dict[str, Any]:
    p = test["p_value"]
    return {
        "metric_a": a,
        "metric_b": b,
        "column": column,
        "value_a": test["a"],
        "value_b": test["b"],
        "difference": test["difference"],
        "ci_low": test["ci_low"],
        "ci_high": test["ci_high"],
        "p_value": p,
        "n_boot": test["n_boot"],
        "significant": p is not None and p < alpha,
    }


def _cell(result: Mapping[str, Any], kind: str, name: str, column: str) -> tuple[float | None, Any, Any]:
    cell = result["metrics"][name].get(column)
    if cell is None:
        return None, None, None
    if kind == "pearson":
        cell = cell["pearson"]
    return cell["value"], cell.get("ci_low"), cell.get("ci_high")


def render(result: Mapping[str, Any], fmt: Format = "text") -> str:
    """The comparison as a terminal table, CSV (value and CI columns) or a LaTeX tabular."""
    kind, columns = result["kind"], list(result["columns"])
    names = list(result["metrics"])

    def number(value: float | None) -> str:
        return "" if value is None else f"{value:.3f}"

    if fmt == "csv":
        buffer = io.StringIO()
        writer = csv_writer(buffer)
        titles = ["metric", *[f"{c}{suffix}" for c in columns for suffix in ("", "_ci_low", "_ci_high")]]
        writer.writerow(titles)
        for name in names:
            row = [name]
            for column in columns:
                row.extend(number(v) for v in _cell(result, kind, name, column))
            writer.writerow(row)
        return buffer.getvalue()
    if fmt == "latex":
        header = " & ".join(["Metric", *columns]) + r" \\"
        lines = [r"\begin{tabular}{l" + "r" * len(columns) + "}", r"\toprule", header, r"\midrule"]
        for name in names:
            values = [number(_cell(result, kind, name, c)[0]) for c in columns]
            lines.append(" & ".join([name.replace("_", r"\_"), *values]) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(lines) + "\n"
    width = max([len(n) for n in names] + [6])
    title = "Kendall tau-like" if kind == "kendall" else "Pearson r"
    lines = [f"{title} (95% bootstrap CI)", f"{'metric':<{width}}  " + "  ".join(f"{c:>22}" for c in columns)]
    for name in names:
        cells = []
        for column in columns:
            value, low, high = _cell(result, kind, name, column)
            text = number(value) if low is None else f"{number(value)} [{number(low)}, {number(high)}]"
            cells.append(f"{text:>22}")
        lines.append(f"{name:<{width}}  " + "  ".join(cells))
    significant = [p for p in result["paired"] if p["significant"]]
    if significant:
        lines.append("significant differences (paired bootstrap, p < 0.05):")
        lines += [
            f"  {p['column']}: {p['metric_a']} - {p['metric_b']} = {p['difference']:+.3f} (p = {p['p_value']:.3f})"
            for p in significant
        ]
    return "\n".join(lines) + "\n"
