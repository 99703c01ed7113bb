"""Properties on the released SimpEval_2022 data (360 outputs)."""

from __future__ import annotations

from collections import Counter

import pytest

from annotation.analysis import Analysis, analyze_many, apply_edits, categorize, token_keys

LABELS = {"Splittings": "split", "Deletions": "deletion", "Paraphrases": "paraphrase"}


@pytest.fixture(scope="module")
def analysed(simpeval_2022: list[dict[str, str]]) -> list[tuple[dict[str, str], Analysis]]:
    results = analyze_many([(r["original"], r["generation"]) for r in simpeval_2022])
    return list(zip(simpeval_2022, results, strict=True))


def agreement(analysed: list[tuple[dict[str, str], Analysis]], rule: str) -> float:
    hits = Counter(
        categorize(result.features, rule=rule)[0] == LABELS[row["sentence_type"]]  # type: ignore[arg-type]
        for row, result in analysed
    )
    return hits[True] / len(analysed)


def test_all_rows_analysed(analysed: list[tuple[dict[str, str], Analysis]]) -> None:
    assert len(analysed) == 360
    assert all(result.error is None for _, result in analysed)


def test_default_category_agrees_with_annotators(
    analysed: list[tuple[dict[str, str], Analysis]],
) -> None:
    default = sum(
        result.category == LABELS[row["sentence_type"]] for row, result in analysed
    ) / len(analysed)
    assert default >= 0.91
    assert default == agreement(analysed, "refined")
    # The refined default must really beat the paper's rule on this data.
    assert agreement(analysed, "paper") >= 0.91
    assert agreement(analysed, "refined") > agreement(analysed, "paper")


def test_edits_rebuild_every_output(analysed: list[tuple[dict[str, str], Analysis]]) -> None:
    broken = [
        row["generation"]
        for row, result in analysed
        if apply_edits(row["original"], row["generation"], result.edits)
        != token_keys(row["generation"])
    ]
    assert broken == []


def test_split_edits_match_split_category(
    analysed: list[tuple[dict[str, str], Analysis]],
) -> None:
    with_split_edit = [any(edit.type == "split" for edit in result.edits) for _, result in analysed]
    assert [result.category == "split" for _, result in analysed] == with_split_edit  # one if and only if the other
    assert 0 < sum(with_split_edit) < len(analysed)  # both kinds occur, so the comparison says something
