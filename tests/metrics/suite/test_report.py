"""The comparison table over several metrics on the released SimpEval_2022 and WIKI-DA files."""

from __future__ import annotations

from pathlib import Path

import pytest

from metrics.suite import create_metric
from metrics.suite.datasets import load_simpeval_2022, load_wiki_da, simpeval_past_sources
from metrics.suite.report import compare_metrics, render

pytestmark = pytest.mark.data


def test_simpeval_2022_comparison_table(simpeval_data_dir: Path) -> None:
    outputs = load_simpeval_2022(simpeval_data_dir)
    items = [o.item for o in outputs]
    scores = {name: [s.value for s in create_metric(name).score_batch(items)] for name in ("fkgl", "gleu", "sari")}
    result = compare_metrics(outputs, scores, n_boot=200)
    assert result["kind"] == "kendall"
    assert round(result["metrics"]["sari"]["all"]["value"], 3) == 0.289
    cell = result["metrics"]["fkgl"]["all"]
    assert cell["ci_low"] < cell["value"] < cell["ci_high"]
    fkgl_vs_sari = next(p for p in result["paired"] if {p["metric_a"], p["metric_b"]} == {"fkgl", "sari"})
    assert fkgl_vs_sari["significant"]  # -0.356 against 0.289
    text = render(result)
    assert "Kendall tau-like" in text and "sari" in text and "significant differences" in text
    assert render(result, "csv").splitlines()[0].startswith("metric,paraphrase,paraphrase_ci_low")
    assert r"\begin{tabular}" in render(result, "latex")


def test_wiki_da_comparison_table(simpeval_data_dir: Path) -> None:
    outputs = load_wiki_da(simpeval_data_dir, exclude_sources=simpeval_past_sources(simpeval_data_dir))
    items = [o.item for o in outputs]
    scores = {name: [s.value for s in create_metric(name).score_batch(items)] for name in ("fkgl", "gleu")}
    result = compare_metrics(outputs, scores, n_boot=200)
    assert result["kind"] == "pearson" and result["columns"] == ["fluency", "meaning", "simplicity"]
    assert round(result["metrics"]["gleu"]["meaning"]["pearson"]["value"], 3) == 0.622
    assert len(result["paired"]) == 3
    assert "0.460" in render(result)
