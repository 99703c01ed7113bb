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


def test_the_plot_names_its_axes_and_threshold_for_a_reader_and_a_screen_reader() -> None:
    """Panels say what they plot (not the keys 'tau' and 'top-1'), the 0.95 line is labelled, the SVG is an
    image with a title naming the ratings, and coinciding policies stay apart by dash pattern."""
    study = Study.from_records(synthetic_records(named=True), name="s")
    curve = {name: curves(study, [simulate(study, make_policy(name), seed=0)], steps=5)
             for name in ("uniform", "round_robin")}
    root = ElementTree.fromstring(svg_plot(study.name, study.full_ratings, curve))
    ns = "{http://www.w3.org/2000/svg}"
    texts = {t.text for t in root.iter(f"{ns}text")}
    assert {"Kendall τ with the full ranking", "top system right (share of seeds)", "τ = 0.95"} <= texts
    assert not {"tau", "top-1"} & texts
    assert root.get("role") == "img" and f"{study.full_ratings} ratings" in root.get("aria-label", "")
    assert root.find(f"{ns}title") is not None
    dashes = {line.get("stroke-dasharray") for line in root.iter(f"{ns}polyline")}
    assert len(dashes) == 2  # one solid, one dashed
