"""One row per (human column, metric) of a meta-evaluation: the output level's and the system level's figures.

:func:`meta_table_rows` builds the rows from :func:`metrics.services.meta_evaluation.rated_meta_evaluate`'s
result; :func:`render_meta_table` writes them as CSV, LaTeX or a Markdown table (``meta_evaluate --level
system|both --format csv|latex`` and ``experiments/system_level_tables.py``), so every format shows the same
columns as the text table: the output-level headline (the LENS authors' tau-like over all categories, or
Pearson per aspect), the output-level ``acc_eq`` with its threshold and cluster, then the system-level
Pearson, Kendall tau-b, pairwise accuracy (with their 95% intervals over sources), ``acc_eq`` with its
threshold, and the clusters on accuracy, Pearson and ``acc_eq``.  A pure module: no Django.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from core.csvsafe import csv_writer

TableFormat = Literal["csv", "latex", "markdown"]

OUTPUT_COLUMNS = ("output", "output_acc_eq", "output_acc_eq_epsilon", "output_cluster")
SYSTEM_COLUMNS = (
    "sys_pearson", "sys_pearson_ci_low", "sys_pearson_ci_high", "sys_kendall",
    "sys_accuracy", "sys_accuracy_ci_low", "sys_accuracy_ci_high", "sys_acc_eq", "sys_acc_eq_epsilon",
    "cluster_accuracy", "cluster_pearson", "cluster_acc_eq",
)


def _columns(result: Mapping[str, Any]) -> list[str]:
    if "system" in result:
        return list(result["system"]["humans"])
    return list(result.get("output_clusters", {}))


def meta_table_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The table's rows: per human column, every metric, best system-level pairwise accuracy first (best
    output-level ``acc_eq`` first without a system level).

    ``output`` is the tau-like over all categories (Rank & Rate ratings) or the Pearson against that column
    (multi-aspect ratings).  Columns missing from the result's level are left out of the rows (no system keys
    for ``level="output"``, no output ``acc_eq`` keys for ``level="system"``).
    """
    rows: list[dict[str, Any]] = []
    system = result.get("system")
    out_clusters = result.get("output_clusters", {})
    for column in _columns(result):
        ranked = system["clusters"][column]["accuracy"] if system is not None else out_clusters[column]
        for name in ranked["order"]:
            entry = result["metrics"][name]
            output = entry["kendall"]["all"] if result["kind"] == "kendall" else entry["pearson"].get(column)
            row: dict[str, Any] = {"human": column, "metric": name, "output": output}
            if column in out_clusters:
                cell = entry["acc_eq"][column]
                row.update(output_acc_eq=cell["value"], output_acc_eq_epsilon=cell["epsilon"],
                           output_cluster=out_clusters[column]["rank"][name])
            if system is not None:
                cells = system["metrics"][name][column]
                clusters = system["clusters"][column]
                row.update(
                    sys_pearson=cells["pearson"]["value"],
                    sys_pearson_ci_low=cells["pearson"]["ci_sources"][0],
                    sys_pearson_ci_high=cells["pearson"]["ci_sources"][1],
                    sys_kendall=cells["kendall"]["value"],
                    sys_accuracy=cells["accuracy"]["value"],
                    sys_accuracy_ci_low=cells["accuracy"]["ci_sources"][0],
                    sys_accuracy_ci_high=cells["accuracy"]["ci_sources"][1],
                    sys_acc_eq=cells["acc_eq"]["value"],
                    sys_acc_eq_epsilon=cells["acc_eq"]["epsilon"],
                    cluster_accuracy=clusters["accuracy"]["rank"][name],
                    cluster_pearson=clusters["pearson"]["rank"][name],
                    cluster_acc_eq=clusters["acc_eq"]["rank"][name],
                )
            rows.append(row)
    return rows


def _number(value: Any) -> str:
    return "" if value is None else f"{value:.3f}"


def _eps(value: Any) -> str:
    return "" if value is None else f"{value:.3g}"


def _ci(row: Mapping[str, Any], key: str) -> str:
    return f"{_number(row[key])} [{_number(row[key + '_ci_low'])}, {_number(row[key + '_ci_high'])}]"


def _display(rows: Sequence[Mapping[str, Any]], kind: str, column: str) -> tuple[list[str], list[list[str]]]:
    """The human-readable cells of one column's rows (LaTeX and Markdown): the text table's layout."""
    head = ["metric", "tau-like all" if kind == "kendall" else f"Pearson ({column})"]
    has_output = any("output_acc_eq" in r for r in rows)
    has_system = any("sys_pearson" in r for r in rows)
    if has_output:
        head += ["acc_eq out (eps)", "cl"]
    if has_system:
        head += ["sys Pearson [95% CI]", "sys Kendall", "sys accuracy [95% CI]", "sys acc_eq (eps)",
                 "cl acc/r/acc_eq"]
    body = []
    for row in rows:
        cells = [row["metric"], _number(row["output"])]
        if has_output:
            cells += [f"{_number(row['output_acc_eq'])} ({_eps(row['output_acc_eq_epsilon'])})",
                      str(row["output_cluster"])]
        if has_system:
            cells += [_ci(row, "sys_pearson"), _number(row["sys_kendall"]), _ci(row, "sys_accuracy"),
                      f"{_number(row['sys_acc_eq'])} ({_eps(row['sys_acc_eq_epsilon'])})",
                      f"{row['cluster_accuracy']}/{row['cluster_pearson']}/{row['cluster_acc_eq']}"]
        body.append(cells)
    return head, body


def render_meta_table(result: Mapping[str, Any], fmt: TableFormat) -> str:
    """:func:`meta_table_rows` as CSV (one header, a ``human`` column, numbers unrounded), a LaTeX tabular per
    human column, or a Markdown table per human column."""
    rows = meta_table_rows(result)
    if fmt == "csv":
        keys = ["human", "metric", "output"]
        keys += [k for k in (*OUTPUT_COLUMNS[1:], *SYSTEM_COLUMNS) if any(k in r for r in rows)]
        buffer = io.StringIO()
        writer = csv_writer(buffer)
        writer.writerow(keys)
        for row in rows:
            writer.writerow(["" if row.get(k) is None else row[k] for k in keys])
        return buffer.getvalue()
    parts = []
    for column in _columns(result):
        head, body = _display([r for r in rows if r["human"] == column], result["kind"], column)
        if fmt == "latex":
            def tex(text: str) -> str:
                return text.replace("_", r"\_")
            lines = [f"% humans: {tex(column)}", r"\begin{tabular}{l" + "r" * (len(head) - 1) + "}", r"\toprule",
                     " & ".join(tex(h) for h in head) + r" \\", r"\midrule"]
            lines += [" & ".join(tex(c) for c in cells) + r" \\" for cells in body]
            lines += [r"\bottomrule", r"\end{tabular}"]
        else:
            lines = [f"Humans: {column}.", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
            lines += ["| " + " | ".join(cells) + " |" for cells in body]
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)
