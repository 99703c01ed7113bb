"""Model-free units: categorisation rules, edit rebuilding, features helpers."""

from __future__ import annotations

import pytest

from annotation.analysis import Edit, categorize
from annotation.analysis.edits import rebuild_tokens
from annotation.analysis.features import is_subsequence, replace_only_levenshtein
from annotation.analysis.text import Token, match_key


def features(**overrides: float | int | bool) -> dict[str, float | int | bool]:
    base: dict[str, float | int | bool] = {
        "compression_ratio": 0.9,
        "source_sentences": 1,
        "output_sentences": 1,
        "deletion_only": False,
        "proportion_deleted": 0.1,
        "proportion_added": 0.1,
    }
    base.update(overrides)
    return base


@pytest.mark.parametrize("rule", ["paper", "refined"])
def test_paper_clauses(rule: str) -> None:
    assert categorize(features(output_sentences=2), rule=rule)[0] == "split"  # type: ignore[arg-type]
    category, reasons = categorize(features(compression_ratio=0.4), rule=rule)  # type: ignore[arg-type]
    assert category == "deletion"
    assert reasons["threshold"] == 0.5
    assert reasons["rule"] == "compression ratio below the threshold"
    assert categorize(features(deletion_only=True), rule=rule)[0] == "deletion"  # type: ignore[arg-type]
    assert categorize(features(), rule=rule)[0] == "paraphrase"  # type: ignore[arg-type]
    # threshold is a parameter
    assert categorize(features(compression_ratio=0.55), compression_threshold=0.6, rule=rule)[0] == "deletion"  # type: ignore[arg-type]


def test_refined_rule_only_adds_mostly_deleting_outputs() -> None:
    mostly = features(compression_ratio=0.6, proportion_deleted=0.5, proportion_added=0.1)
    assert categorize(mostly, rule="paper")[0] == "paraphrase"
    category, reasons = categorize(mostly, rule="refined")
    assert category == "deletion" and reasons["rule"].startswith("mostly deletion")
    rewrite = features(compression_ratio=0.6, proportion_deleted=0.7, proportion_added=0.6)
    assert categorize(rewrite, rule="refined")[0] == "paraphrase"
    with pytest.raises(ValueError):
        categorize(features(), rule="other")  # type: ignore[arg-type]


def toks(text: str) -> list[Token]:
    out: list[Token] = []
    pos = 0
    for word in text.split():
        start = text.index(word, pos)
        pos = start + len(word)
        out.append(Token(word, start, pos, match_key(word), word, False, False, 0))
    return out


def test_rebuild_tokens_applies_union_of_removals() -> None:
    src, out = "a b c d", "a d x b"
    edits = [
        Edit("deletion", source_span=(2, 5), anchor=1),  # "b c"
        Edit("paraphrase", source_span=(2, 3), output_span=(4, 7)),  # "x b" (b moved)
    ]
    assert rebuild_tokens(toks(src), toks(out), edits) == ["a", "d", "x", "b"]


def test_match_key_ignores_case_quotes_and_dashes() -> None:
    assert match_key("\u201cHello\u201d") == match_key('"hello"')
    assert match_key("\u2013") == match_key("-")
    assert match_key("don\u2019t") == "don't"


def test_feature_helpers() -> None:
    assert is_subsequence(["a", "c"], ["a", "b", "c"])
    assert not is_subsequence(["c", "a"], ["a", "b", "c"])
    assert replace_only_levenshtein("cat", "cut") == pytest.approx(1 / 3)
    assert replace_only_levenshtein("", "abc") == 0.0
