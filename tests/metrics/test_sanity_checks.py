"""Sanity checks in the testbed (MeaningBERT's): identical outputs get the best score, unrelated ones the worst."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from metrics.perturb.sanity import SANITY_CHECKS, sanity_evaluate, sanity_passes, sanity_text
from metrics.perturb.testbed import CorpusRow, run_testbed
from metrics.services.sensitivity import metric_sensitivity
from metrics.suite import Item, Metric, Score
from metrics.suite import registry as suite_registry
from tests.metrics.test_testbed import SIMPLE, SOURCES, _import, corpus_files  # noqa: F401  (fixture)


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class Overlap(Metric):
    """Built to pass: 1 for a copy of the source or a reference, else 0.9 x the word overlap (Jaccard) with
    them, so an unrelated sentence scores far below any edit of the source."""

    name = "sanity-pass"
    needs_references = True
    higher_is_better = True
    needs_complex = True
    sign = 1.0

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        pass

    @property
    def signature(self) -> str:
        return f"{self.name}|test"

    def _score(self, items: Sequence[Item]) -> list[Score]:
        out = []
        for item in items:
            if item.output in (item.complex, *item.references):
                value = 1.0
            else:
                mine, theirs = _words(item.output), _words(" ".join((item.complex, *item.references)))
                value = 0.9 * len(mine & theirs) / max(1, len(mine | theirs))
            out.append(Score(self.sign * value))
        return out


class AntiOverlap(Overlap):
    """Built to fail: the same number negated while claiming that higher is better (copies score worst)."""

    name = "sanity-fail"
    sign = -1.0


@pytest.fixture
def fake_metrics(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Register the two metrics for this test only."""
    for cls in (Overlap, AntiOverlap):
        monkeypatch.setitem(suite_registry._REGISTRY, cls.name, cls)
        monkeypatch.setitem(suite_registry._VARIANTS, cls.name, ())
    yield


def test_best_and_worst_follow_the_metrics_direction_within_the_tolerance() -> None:
    assert sanity_passes(1.0, [0.2, 1.0], want="best", higher_is_better=True)  # a tie with the best passes
    assert sanity_passes(0.995, [0.0, 1.0], want="best", higher_is_better=True)  # within 1% of the spread
    assert not sanity_passes(0.98, [0.0, 1.0], want="best", higher_is_better=True)
    assert sanity_passes(0.0, [3.0, 9.0], want="best", higher_is_better=False)  # FKGL-like: lower is better
    assert not sanity_passes(9.0, [3.0, 0.0], want="best", higher_is_better=False)
    assert sanity_passes(9.0, [3.0, 0.0], want="worst", higher_is_better=False)
    assert not sanity_passes(float("nan"), [0.0], want="worst", higher_is_better=True)
    with pytest.raises(ValueError, match="want"):
        sanity_passes(0.0, [], want="top", higher_is_better=True)


def test_a_check_passes_only_when_every_source_passes_and_counts_say_so() -> None:
    sources: list[dict[str, Any]] = [
        {"candidates": {"identical_to_source": 1.0, "unrelated": 0.0}, "texts": {"identical_to_source": "a"},
         "others": {"a": 5.0, "b": 0.5}},  # "a" is the candidate itself (Copy): left out
        {"candidates": {"identical_to_source": 0.2, "unrelated": 0.1}, "texts": {}, "others": {"b": 0.5}},
    ]
    report = sanity_evaluate(sources, higher_is_better=True)
    assert list(report) == list(SANITY_CHECKS)
    assert report["identical_to_source"] | {} == {
        "want": "best", "label": SANITY_CHECKS["identical_to_source"]["label"], "passed": 1, "total": 2,
        "passes": False, "failed_sources": [1]}
    assert report["unrelated"]["passed"] == 2 and report["unrelated"]["passes"] is True
    assert report["identical_to_reference"]["total"] == 0 and report["identical_to_reference"]["passes"] is False
    assert sanity_text(report) == "identical to source 1/2 FAIL, unrelated 2/2 pass"


def test_the_testbed_fails_a_metric_built_to_fail_and_passes_one_built_to_pass(fake_metrics: None) -> None:
    rows = [CorpusRow(i, s, tuple(r)) for i, (s, r) in enumerate(zip(SOURCES, SIMPLE, strict=True))]
    metrics = [Overlap(), AntiOverlap()]
    result = run_testbed(rows, metrics, magnitudes=[0.0, 100.0], perturbations=["delete"], seed=1)
    good, bad = result.sanity["sanity-pass"], result.sanity["sanity-fail"]
    for check in SANITY_CHECKS:
        assert good[check]["passed"] == good[check]["total"] == len(rows) and good[check]["passes"], check
        assert bad[check]["passed"] == 0 and bad[check]["total"] == len(rows) and not bad[check]["passes"], check
    assert bad["unrelated"]["failed_sources"] == [row.index for row in rows]
    assert result.summary({})["sanity"]["sanity-pass"]["unrelated"]["passes"] is True


@pytest.mark.django_db
def test_the_command_prints_the_checks_and_records_them_with_the_report(
    fake_metrics: None, corpus_files: list[Path], tmp_path: Path  # noqa: F811
) -> None:
    _import(corpus_files)
    out = StringIO()
    call_command("perturbation_testbed", "--metrics", "sanity-pass,sanity-fail", "--dataset", "tiny",
                 "--magnitudes", "0,100", "--perturbations", "delete", "--out", str(tmp_path / "o"), stdout=out,
                 stderr=StringIO())
    text = out.getvalue()
    assert ("sanity-pass: identical to source 6/6 pass, identical to reference 6/6 pass, unrelated 6/6 pass"
            in text)
    assert "sanity-fail: identical to source 0/6 FAIL, identical to reference 0/6 FAIL, unrelated 0/6 FAIL" in text
    summary = json.loads((tmp_path / "o" / "summary.json").read_text(encoding="utf-8"))
    assert summary["sanity"]["sanity-fail"]["identical_to_source"]["passes"] is False
    reports = metric_sensitivity(["sanity-pass", "sanity-fail"])
    assert reports["sanity-pass"]["sanity"]["unrelated"]["passed"] == 6
    assert reports["sanity-fail"]["sanity_text"].startswith("identical to source 0/6 FAIL")
    assert "sanity" not in reports["sanity-pass"]["run"]  # the run says what was measured on, not the results


def test_the_testbed_page_shows_which_metrics_pass_each_check(
    fake_metrics: None, tiny_corpus: str, researcher: Any, web_client_for: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    from core.models import BackgroundJob

    client = web_client_for(researcher)
    form = {"dataset": "tiny", "metrics": "sanity-pass,sanity-fail", "magnitudes": "0,100", "sample": "4",
            "seed": "1", "rows": ""}
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/research/testbed/", form)
    job = BackgroundJob.objects.get(kind="testbed")
    page = client.get(f"/research/testbed/{job.pk}/").content.decode()
    assert "Sanity checks" in page and "Identical to reference" in page
    good = page.split('data-sanity="sanity-pass"')[1].split("</tr>")[0]
    bad = page.split('data-sanity="sanity-fail"')[1].split("</tr>")[0]
    assert good.count('data-passes="yes"') == 3 and "4/4" in good
    assert bad.count('data-passes="no"') == 3 and "0/4" in bad
    # the metric names its row for a screen reader, and the note says what "–" means
    assert good.lstrip().startswith('><th scope="row">sanity-pass</th>')
    assert "–: not checked" in page.split('id="sanity-title"')[1].split("</table>")[0]
