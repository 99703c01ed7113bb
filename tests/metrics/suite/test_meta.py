"""metrics.suite.meta speaks the project's words: the no-category label and the tau-like's threshold."""

from __future__ import annotations

from annotation.rules import TAU_THRESHOLD, UNCATEGORISED
from metrics.suite import Item
from metrics.suite.datasets import RatedOutput
from metrics.suite.meta import tau_items, tau_like


def _output(system: str, category: str | None, ratings: dict[str, float]) -> RatedOutput:
    return RatedOutput(source="s1", system=system, item=Item("A long sentence.", f"{system} says it.", ()),
                       category=category, ratings=ratings)


def test_outputs_without_a_category_are_compared_under_the_projects_label() -> None:
    outputs = [_output("A", None, {"r1": 90.0, "r2": 80.0}), _output("B", None, {"r1": 20.0, "r2": 30.0}),
               _output("C", "split", {"r1": 50.0, "r2": 50.0})]
    assert [item.category for item in tau_items(outputs, [1.0, 0.0, 0.5])] == [UNCATEGORISED, UNCATEGORISED, "split"]
    result = tau_like(outputs, [1.0, 0.0, 0.5])
    assert result[UNCATEGORISED]["value"] == 1.0 and result["all"]["value"] == 1.0


def test_the_default_threshold_is_the_projects() -> None:
    gap = TAU_THRESHOLD  # a gap of exactly the threshold is a tie; a little more is an order
    tied = [_output("A", "split", {"r1": 50.0 + gap}), _output("B", "split", {"r1": 50.0})]
    ordered = [_output("A", "split", {"r1": 50.5 + gap}), _output("B", "split", {"r1": 50.0})]
    assert tau_like(tied, [1.0, 0.0])["all"]["value"] is None
    assert tau_like(ordered, [1.0, 0.0])["all"]["value"] == 1.0
