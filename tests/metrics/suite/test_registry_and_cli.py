"""The registry (names, variants, run-time providers) and the JSONL command's output and errors."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from metrics.suite import (
    EmptyTextError,
    Item,
    Metric,
    MetricError,
    MissingReferencesError,
    Score,
    UnknownMetricError,
    available_metrics,
    create_metric,
    create_metrics,
    register_provider,
    unregister_provider,
)
from metrics.suite.cli import main


def test_every_metric_states_its_variant() -> None:
    names = available_metrics()
    for expected in ("fkgl", "bleu", "gleu", "sari", "sari:lens", "bertscore", "self-bertscore"):
        assert expected in names
    signatures = {name: create_metric(name).signature for name in names}
    assert signatures["sari"].startswith("sari:easse|case:lower|tok:13a|del:f1|")
    assert signatures["sari:lens"].startswith("sari:lens|case:lower|tok:nltk-punkt|del:precision|")
    assert signatures["gleu"].startswith("gleu:nltk|case:lower|tok:nltk-punkt|ngram:1-4|refs:best|")
    assert "eff:yes" in signatures["bleu"] and "tok:13a" in signatures["bleu"]
    assert all("version:" in signature for signature in signatures.values())


def test_unknown_metric_and_variant_list_the_known_ones() -> None:
    with pytest.raises(UnknownMetricError, match=r"unknown metric 'rouge'; known: .*sari:lens"):
        create_metric("rouge")
    with pytest.raises(UnknownMetricError, match=r"unknown variant 'easse2' of 'sari'; variants: sari:lens"):
        create_metric("sari:easse2")


def test_missing_references_and_empty_outputs_are_named() -> None:
    with pytest.raises(MissingReferencesError, match="sari needs references: item 1 has none"):
        create_metric("sari").score_batch([Item("a b", "a", ("a",)), Item("a b", "a")])
    with pytest.raises(EmptyTextError, match="gleu: item 0 has an empty output"):
        create_metric("gleu").score_batch([Item("a b", "  ", ("a",))])
    fkgl = create_metric("fkgl")
    short, long = fkgl.score_batch([Item("", "A cat."), Item("", "Notwithstanding considerable institutional "
                                                                  "opposition, administrators implemented reforms.")])
    assert short.value == fkgl.score_batch([Item("Any source at all.", "A cat.")])[0].value  # the source is unused
    assert short.value < 0 < 10 < long.value  # a grade, from below the first to beyond school


class _Constant(Metric):
    needs_references = False

    def __init__(self, name: str, value: float) -> None:
        self.name = name
        self.value = value

    @property
    def signature(self) -> str:
        return f"{self.name}|const:{self.value}"

    def _score(self, items: Sequence[Item]) -> list[Score]:
        return [Score(self.value) for _ in items]


@pytest.fixture
def lens_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A constant ``lens:N`` provider in place of the product's (which reads the database), for one test."""
    from metrics.suite import registry

    def provide(name: str, options: dict[str, Any]) -> Metric | None:
        family, _, version = name.partition(":")
        return _Constant(name, float(version or 1)) if family == "lens" else None

    monkeypatch.setattr(registry, "_PROVIDERS", [])
    register_provider("lens", provide, names=lambda: ["lens:1", "lens:2"])
    yield
    unregister_provider("lens")


def test_providers_add_run_time_names(lens_provider: None) -> None:
    assert "lens:2" in available_metrics()
    assert create_metric("lens:2").score_batch([Item("a", "b")])[0].value == 2.0
    assert [m.name for m in create_metrics(["lens:1", "fkgl"])] == ["lens:1", "fkgl"]


def test_all_expands_to_every_name_with_per_family_options(lens_provider: None) -> None:
    metrics = create_metrics(["all"], {"bertscore": {"layer": 3}})
    names = [m.name for m in metrics]
    assert names == available_metrics()
    bert = next(m for m in metrics if m.name == "bertscore")
    assert "layer:3" in bert.signature


def test_item_from_mapping_rejects_bad_fields() -> None:
    assert Item.from_mapping({"complex": "a", "output": "b"}).references == ()
    with pytest.raises(MetricError, match="x: 'output' must be a string"):
        Item.from_mapping({"complex": "a", "output": 3}, where="x")
    with pytest.raises(MetricError, match="'references' must be a list"):
        Item.from_mapping({"complex": "a", "output": "b", "references": "c"})


# --- the command ------------------------------------------------------------------------------------


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_score_command_writes_scores_and_prints_signatures(tmp_path: Path) -> None:
    source = _write(
        tmp_path / "items.jsonl",
        [
            {"id": "a", "complex": "A b", "output": "a C", "references": ["a c"]},
            {"id": "b", "complex": "The cat sat.", "output": "The cat sat.", "references": ["A cat sat."]},
        ],
    )
    out = tmp_path / "scored.jsonl"
    err = io.StringIO()
    assert main(["score", "--metric", "sari,fkgl", "--input", str(source), "--out", str(out)], err=err) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [row["id"] for row in rows] == ["a", "b"]
    assert rows[0]["scores"]["sari"]["value"] == pytest.approx(125 / 3)
    # "A b" -> "a C", reference "a c" (lowercased): every unigram and bigram edit matches the reference; the
    # only kept n-gram is the unigram "a", and no trigram exists. Per n-gram order 1..4, averaged:
    # add (1 + 1 + 0 + 0) / 4, keep (1 + 0 + 0 + 0) / 4, delete (1 + 1 + 0 + 0) / 4; SARI their mean.
    assert rows[0]["scores"]["sari"]["components"] == pytest.approx({"add": 50.0, "keep": 25.0, "delete": 50.0})
    assert rows[1]["scores"]["fkgl"]["value"] == create_metric("fkgl").score_batch([Item("", "The cat sat.")])[0].value
    printed = err.getvalue()
    assert "sari:easse|case:lower|tok:13a|del:f1" in printed and "fkgl:textstat-0.7.3" in printed


@pytest.mark.parametrize(
    ("rows", "metric", "message"),
    [
        ([{"complex": "a b", "output": "a"}], "fkgl,sari", "sari needs references: {path} line 1 has none"),
        ([{"complex": "a b", "output": " ", "references": ["a"]}], "gleu", "gleu: {path} line 1 has an empty output"),
        ([{"complex": "a", "output": "b"}], "rouge", "unknown metric 'rouge'; known: bertscore"),
        ([{"complex": "a", "output": "b"}], "sari:x", "unknown variant 'x' of 'sari'; variants: sari:lens"),
        ([], "fkgl", "{path}: no items"),
    ],
)
def test_score_command_errors(tmp_path: Path, rows: list[dict[str, Any]], metric: str, message: str) -> None:
    source = _write(tmp_path / "in.jsonl", rows)
    err = io.StringIO()
    assert main(["score", "--metric", metric, "--input", str(source), "--out", str(tmp_path / "o")], err=err) == 2
    assert message.format(path=source) in err.getvalue()
    assert not (tmp_path / "o").exists()


def test_score_command_reports_invalid_json_line(tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"complex": "a", "output": "b"}\n{oops\n', encoding="utf-8")
    err = io.StringIO()
    assert main(["score", "--metric", "fkgl", "--input", str(source)], err=err) == 2
    assert f"{source} line 2: invalid JSON" in err.getvalue()


def test_list_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    listing = capsys.readouterr().out
    assert "sari:lens\tneeds references" in listing and "fkgl\tno references\tlower is better" in listing
