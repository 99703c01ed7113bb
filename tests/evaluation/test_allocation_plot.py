"""The allocation curves' SVG (evaluation.allocation.plot): one line per policy, texts escaped."""

from __future__ import annotations

from xml.etree import ElementTree

from evaluation.allocation import Study, curves, make_policy, simulate
from evaluation.allocation.plot import svg_plot
from tests.evaluation.test_allocation import synthetic_records


def test_the_plot_is_valid_svg_with_a_line_per_policy_and_escaped_names() -> None:
    study = Study.from_records(synthetic_records(named=True), name="<study & co>")
    curve = {name: curves(study, [simulate(study, make_policy(name), seed=s) for s in range(2)], steps=10)
             for name in ("uniform", "round_robin")}
    svg = svg_plot(study.name, study.full_ratings, curve)
    root = ElementTree.fromstring(svg)  # well-formed: the name's < and & are escaped
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert any(t and t.startswith("<study & co>") for t in texts)
    assert {"uniform", "round_robin"} <= set(texts)
    lines = list(root.iter("{http://www.w3.org/2000/svg}polyline"))
    assert len(lines) == 2 * len(curve)  # tau and top-1 per policy
