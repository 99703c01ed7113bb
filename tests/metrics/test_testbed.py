"""Named corpora (import_corpus) and the perturbation testbed command on a small hand-written corpus."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Corpus
from core.errors import ServiceError
from metrics.services.testbed import SLOPE_KEYS, parse_magnitudes, parse_rows

pytestmark = pytest.mark.django_db

SOURCES = [
    "In 2019, the company increased its sales by 25 percent in France and bought two factories in Germany.",
    "The river, which rises in the Alps, flows north through Switzerland and reaches the sea in 1200 kilometres.",
    "Marie Curie, who was born in Warsaw, won the Nobel Prize in 1903 and taught in Paris for many years.",
    "The team lost the final in 1998, but it won the national championship two years later in Madrid.",
    "The museum, which opened in 1870, holds more than 3000 paintings and attracts visitors from Italy.",
    "The committee rejected the proposal in 2004 because the costs had increased sharply during the delay.",
]
SIMPLE = [
    ["The company sold 25 percent more in France. It bought two factories in Germany.",
     "In 2019 the company sold more in France and bought two factories in Germany."],
    ["The river starts in the Alps. It flows north through Switzerland for 1200 kilometres.",
     "The river flows from the Alps through Switzerland to the sea."],
    ["Marie Curie was born in Warsaw. She won the Nobel Prize in 1903 and taught in Paris.",
     "Marie Curie won the Nobel Prize in 1903. She taught in Paris."],
    ["The team lost the final in 1998. Two years later it won the championship in Madrid.",
     "The team lost in 1998 but won the championship in Madrid two years later."],
    ["The museum opened in 1870. It has more than 3000 paintings and many visitors from Italy.",
     "The museum has over 3000 paintings and opened in 1870."],
    ["The committee said no to the plan in 2004 because it cost more after the delay.",
     "In 2004 the committee rejected the plan because costs went up."],
]


@pytest.fixture
def corpus_files(tmp_path: Path) -> list[Path]:
    orig = tmp_path / "c.orig"
    orig.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    files = [orig]
    for k in range(2):
        simp = tmp_path / f"c.simp.{k}"
        simp.write_text("\n".join(s[k] for s in SIMPLE) + "\n", encoding="utf-8")
        files.append(simp)
    return files


def _import(files: list[Path], *extra: str) -> str:
    out = StringIO()
    call_command("import_corpus", *map(str, files), "--name", "tiny", *extra, stdout=out)
    return out.getvalue()


def test_import_corpus_once(corpus_files: list[Path], tmp_path: Path) -> None:
    assert "corpus tiny: 6 sources, 2 reference files" in _import(corpus_files)
    corpus = Corpus.objects.get(name="tiny")
    first = corpus.items.get(index=0)
    assert first.source == SOURCES[0] and first.references == SIMPLE[0]
    assert [f["role"] for f in corpus.files] == ["source", "references", "references"]
    with pytest.raises(CommandError, match="already imported"):
        _import(corpus_files)
    _import(corpus_files, "--replace")
    assert Corpus.objects.get(name="tiny").items.count() == 6
    short = tmp_path / "short"
    short.write_text("one line\n\n", encoding="utf-8")  # a blank line at the end is not a line
    with pytest.raises(CommandError, match=r"short: 1 line, but c\.orig has 6 lines"):
        call_command("import_corpus", str(corpus_files[0]), str(short), "--name", "bad", stdout=StringIO())
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_corpus", str(tmp_path / "none"), str(short), "--name", "bad", stdout=StringIO())
    assert not Corpus.objects.filter(name="bad").exists()


def test_testbed_writes_slopes_plots_and_the_lens_figure(corpus_files: list[Path], tmp_path: Path) -> None:
    _import(corpus_files)
    out_dir = tmp_path / "out"
    stdout = StringIO()
    call_command(
        "perturbation_testbed", "--metrics", "fkgl,sari", "--dataset", "tiny", "--magnitudes", "0,50,100",
        "--seed", "3", "--out", str(out_dir), stdout=stdout, stderr=StringIO(),
    )
    assert "GPT" in stdout.getvalue() and "ASSET" in stdout.getvalue()
    slopes = json.loads((out_dir / "slopes.json").read_text(encoding="utf-8"))
    assert {row["metric"] for row in slopes} == {"fkgl", "sari"}
    assert all(set(SLOPE_KEYS) <= set(row) for row in slopes)
    cells = {(row["metric"], row["perturbation"]): row for row in slopes}
    assert cells[("sari", "delete")]["slope"] < 0 and cells[("sari", "delete")]["expected_direction"] == "down"
    assert cells[("fkgl", "simplify")]["expected_direction"] == "down"  # lower grade = simpler
    summary = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["config"]["sample"] == 6 and "ASSET" in summary["note"]
    figure = summary["lens_figure"]
    assert {system: cell["n"] for system, cell in figure["sari"].items()} == dict.fromkeys(
        ["Copy", "Drop", "Scramble", "Split", "Human"], 6.0)  # one output of each system per sampled source
    assert figure["fkgl"]["Scramble"] == figure["fkgl"]["Copy"]  # FKGL counts words and syllables, not their order
    assert figure["fkgl"]["Split"]["mean"] < figure["fkgl"]["Copy"]["mean"]  # half-length sentences: a lower grade
    assert figure["sari"]["Human"]["mean"] > figure["sari"]["Copy"]["mean"]  # SARI rewards editing as people do
    assert summary["skipped_no_eligible_span"]["number_swap"] == 0
    for svg in [out_dir / "plots" / "sari.svg", out_dir / "plots" / "fkgl.svg", out_dir / "lens_figure2.svg"]:
        assert ET.parse(svg).getroot().tag.endswith("svg")
    assert (out_dir / "slopes.tsv").read_text(encoding="utf-8").startswith("criterion\tperturbation\tfkgl\tsari")


def test_testbed_errors_name_what_is_wrong(corpus_files: list[Path], tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"'asset-valid' has not been imported.*import_corpus --name asset-valid"):
        call_command("perturbation_testbed", "--metrics", "fkgl", "--dataset", "asset-valid", "--out", str(tmp_path))
    _import(corpus_files)
    with pytest.raises(CommandError, match="unknown metric 'nope'"):
        call_command("perturbation_testbed", "--metrics", "nope", "--dataset", "tiny", "--out", str(tmp_path))
    with pytest.raises(CommandError, match="--magnitudes"):
        call_command("perturbation_testbed", "--metrics", "fkgl", "--dataset", "tiny", "--magnitudes", "0,200",
                     "--out", str(tmp_path))
    with pytest.raises(CommandError, match="unknown perturbations"):
        call_command("perturbation_testbed", "--metrics", "fkgl", "--dataset", "tiny", "--perturbations", "shuffle",
                     "--out", str(tmp_path))


def test_magnitude_and_row_parsing() -> None:
    assert parse_magnitudes("0,10,...,100") == [float(m) for m in range(0, 101, 10)]
    assert parse_magnitudes("0, 25,50") == [0.0, 25.0, 50.0]
    for bad in ("0", "a,b", "0,10,...", "10,0,...,100"):
        with pytest.raises(ServiceError):
            parse_magnitudes(bad)
    assert parse_rows("1500:2000", 2000) == (1500, 2000) and parse_rows(None, 7) == (0, 7)
    with pytest.raises(ServiceError, match="START"):
        parse_rows("5:2", 10)


def test_pomme_lms_are_built_on_first_need(
    corpus_files: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    from metrics.services.pomme import pomme_lms_ensure

    monkeypatch.setenv("POMME_LM_DIR", str(tmp_path / "lms"))
    settings.SIMPEVAL_DATA_DIR = tmp_path / "no-data"
    with pytest.raises(ServiceError, match="no ASSET validation"):
        pomme_lms_ensure()
    asset = tmp_path / "data" / "asset"
    asset.mkdir(parents=True)
    for k in range(10):
        (asset / f"asset.valid.simp.{k}").write_text("\n".join(s[k % 2] for s in SIMPLE * 251), encoding="utf-8")
    (asset / "asset.valid.orig").write_text("\n".join(SOURCES * 251), encoding="utf-8")
    settings.SIMPEVAL_DATA_DIR = tmp_path / "data"
    folder = pomme_lms_ensure()
    assert (folder / "reference.json").is_file() and pomme_lms_ensure() == folder
