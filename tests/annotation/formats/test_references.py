"""Reference files and the one rule that matches a sentence across files (``annotation.rules.sentence_key``)."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest

from annotation.formats import read_reference_files
from annotation.rules import sentence_key


def test_sentence_key_ignores_spacing_and_case_only() -> None:
    assert sentence_key("  The  Cat\tsat.\n") == sentence_key("the cat sat.") == "the cat sat."
    assert sentence_key("The cat sat.") != sentence_key("The cat sat")


def test_reference_files_are_keyed_by_sentence_key_first_line_winning(tmp_path: Path) -> None:
    (tmp_path / "r.src").write_text("The  Cat sat.\nthe cat sat.\nA dog.\n", encoding="utf-8")
    (tmp_path / "r.dst").write_text("Cat sat.\tA cat sat.\nOther.\nDog.\n", encoding="utf-8")
    refs = read_reference_files(tmp_path / "r.src", [tmp_path / "r.dst"])
    assert refs == {"the cat sat.": ["Cat sat.", "A cat sat."], "a dog.": ["Dog."]}


def _column(path: Path, name: str) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [row[name] for row in csv.DictReader(handle)]


ASSET_TEST = ("asset/asset.test.orig", [f"asset/asset.test.simp.{i}" for i in range(10)])
SIMPEVAL_2022 = ("simpeval/simpeval_2022_references.src", ["simpeval/simpeval_2022_references.dst"])
SIMPLICITY_DA = ("simplicity_da/references.src", ["simplicity_da/references.dst"])
RATED: dict[str, tuple[str, str, tuple[str, list[str]]]] = {
    "simpeval-2022": ("simpeval/simpeval_2022.csv", "original", SIMPEVAL_2022),
    "simplicity-da": ("simplicity_da/simplicity_DA.csv", "orig_sent", SIMPLICITY_DA),
    "simpeval-past-asset": ("simpeval/simpeval_past.csv", "original", ASSET_TEST),
    "simplicity-da-asset": ("simplicity_da/simplicity_DA.csv", "orig_sent", ASSET_TEST),
    # Crowd files: one source given in two spellings (simpDA), sentences re-tokenised or recased (ASSET's).
    "simpda-2022": ("simpeval/simpDA_2022.csv", "Input.original", SIMPEVAL_2022),
    "asset-human-ratings": ("asset/human_ratings.csv", "original", ASSET_TEST),
}


@pytest.mark.parametrize("name", ["simpeval-2022", "simplicity-da", "simpeval-past-asset", "simplicity-da-asset"])
def test_every_released_rated_sentence_finds_its_references(simpeval_data_dir: Path, name: str) -> None:
    rated, column, (sources, references) = RATED[name]
    refs = read_reference_files(simpeval_data_dir / sources, [simpeval_data_dir / r for r in references])
    originals = _column(simpeval_data_dir / rated, column)
    unmatched = sorted({o for o in originals if sentence_key(o) not in refs})
    assert originals and not unmatched, unmatched[:3]
    if sources == ASSET_TEST[0]:
        assert {len(refs[sentence_key(o)]) for o in originals} == {10}


@pytest.mark.parametrize("name", sorted(RATED))
def test_sentence_key_keeps_every_match_the_former_rules_made(simpeval_data_dir: Path, name: str) -> None:
    """The importer matched by spacing only and the metric suite by stripped lowercase: whatever line either
    found for a released sentence, ``sentence_key`` finds the same one."""
    rated, column, (sources, _) = RATED[name]
    lines = (simpeval_data_dir / sources).read_text(encoding="utf-8").splitlines()
    originals = _column(simpeval_data_dir / rated, column)

    def index(rule: Callable[[str], str]) -> dict[str, int]:
        found: dict[str, int] = {}
        for number, line in enumerate(lines):
            found.setdefault(rule(line), number)
        return found

    now = index(sentence_key)
    former_rules: list[Callable[[str], str]] = [lambda t: " ".join(t.split()), lambda t: t.strip().lower()]
    for rule in former_rules:
        before = index(rule)
        moved = [o for o in originals if rule(o) in before and now.get(sentence_key(o)) != before[rule(o)]]
        assert not moved, moved[:3]
