"""Hand-checked behaviour of the analysis engine (uses the offline models)."""

from __future__ import annotations

import json

import pytest

from annotation.analysis import (
    ENGINE_VERSION,
    Analysis,
    Edit,
    analyze,
    analyze_many,
    apply_edits,
    token_keys,
)


def span(text: str, sub: str, nth: int = 0) -> tuple[int, int]:
    """Character span of the ``nth`` occurrence of ``sub`` in ``text``."""
    start = -1
    for _ in range(nth + 1):
        start = text.index(sub, start + 1)
    return (start, start + len(sub))


def after(text: str, sub: str, nth: int = 0) -> int:
    return span(text, sub, nth)[1]


def rebuilds(source: str, output: str, result: Analysis) -> bool:
    return apply_edits(source, output, result.edits) == token_keys(output)


def test_identical_texts_have_no_edits() -> None:
    text = "The cat sat on the mat."
    result = analyze(text, text)
    assert result.error is None
    assert result.edits == []
    assert result.category == "paraphrase"  # nothing deleted, nothing split
    assert result.features["exact_match"] is True
    assert result.features["deletion_only"] is False
    assert result.features["compression_ratio"] == 1.0
    assert result.features["levenshtein_similarity"] == 1.0
    assert result.engine_version == ENGINE_VERSION


def test_pure_deletion() -> None:
    src, out = "The cat, which was black, sat on the mat.", "The cat sat on the mat."
    result = analyze(src, out)
    assert result.edits == [
        Edit("deletion", source_span=span(src, ", which was black,"), anchor=after(out, "cat"))
    ]
    assert result.category == "deletion"
    assert result.reasons["rule"] == "output made only by deleting words"
    assert result.reasons["deletion_only"] is True
    assert result.features["proportion_added"] == 0.0
    assert result.features["proportion_deleted"] == pytest.approx(3 / 9)
    assert rebuilds(src, out, result)


def test_one_lexical_substitution() -> None:
    src = "The wounds inflicted by a club are generally known as bludgeoning."
    out = "The wounds caused by a club are generally known as bludgeoning."
    result = analyze(src, out)
    assert result.edits == [
        Edit("paraphrase", source_span=span(src, "inflicted"), output_span=span(out, "caused"))
    ]
    assert result.category == "paraphrase"
    assert rebuilds(src, out, result)


def test_reordering_is_deletion_plus_paraphrase_pointing_back() -> None:
    src, out = "In 2019, he won the cup.", "He won the cup in 2019."
    result = analyze(src, out)
    assert result.edits == [
        # old place: caret before "He"; the comma went with the moved phrase
        Edit("deletion", source_span=span(src, "In 2019,"), anchor=0),
        # new place, pointing back at the words it came from
        Edit("paraphrase", source_span=span(src, "In 2019"), output_span=span(out, "in 2019")),
    ]
    assert result.features["proportion_reordered"] == pytest.approx(2 / 6)
    assert result.features["proportion_added"] == 0.0
    assert rebuilds(src, out, result)


def test_split_with_added_words() -> None:
    src, out = "He was tired and he went home.", "He was tired. So he went home early."
    result = analyze(src, out)
    assert result.edits == [
        Edit("paraphrase", source_span=span(src, "and"), output_span=span(out, ". So")),
        Edit("split", anchor=after(out, "tired.")),
        Edit("paraphrase", source_span=None, output_span=span(out, "early")),
    ]
    assert result.category == "split"
    assert result.reasons["source_sentences"] == 1
    assert result.reasons["output_sentences"] == 2
    assert result.features["sentence_splits"] == 1
    assert rebuilds(src, out, result)


def test_repeated_words_are_aligned_in_order() -> None:
    src = "the dog saw the other dog near the dog house."
    out = "The dog saw the dog house."
    result = analyze(src, out)
    # "The dog saw the" + "dog house ." are kept; the middle run is deleted once.
    assert result.edits == [
        Edit("deletion", source_span=span(src, "other dog near the"), anchor=after(out, "the", 0))
    ]
    assert result.category == "deletion"
    assert rebuilds(src, out, result)


def test_casing_and_quote_style_are_not_edits_but_punctuation_is() -> None:
    src, out = "He said \u201chello\u201d to BOB.", 'he said "hello" to Bob'
    result = analyze(src, out)
    assert result.edits == [Edit("deletion", source_span=(len(src) - 1, len(src)), anchor=len(out))]
    assert result.features["proportion_deleted"] == 0.0  # words only
    assert rebuilds(src, out, result)


def test_full_rewrite() -> None:
    src = "The meeting was postponed because of the storm."
    out = "Bad weather forced organisers to delay it until later!"
    result = analyze(src, out)
    assert result.edits == [
        Edit("deletion", source_span=span(src, "The meeting was"), anchor=0),
        Edit("paraphrase", source_span=span(src, "postponed because of the storm"),
             output_span=(0, len(out))),
        Edit("deletion", source_span=span(src, "."), anchor=len(out)),
    ]
    assert result.category == "paraphrase"
    assert rebuilds(src, out, result)


def test_json_round_trip() -> None:
    result = analyze("He was tired and he went home.", "He was tired. So he went home early.")
    payload = json.loads(json.dumps(result.to_dict()))
    assert payload["edits"][0] == {
        "type": "paraphrase",
        "source_span": [13, 16],
        "output_span": [12, 16],
        "anchor": None,
    }
    assert Analysis.from_dict(payload) == result
    assert [Edit.from_dict(e) for e in payload["edits"]] == result.edits
    with pytest.raises(ValueError):
        Edit.from_dict({"type": "insertion", "source_span": None, "output_span": None})


def test_deterministic_and_batch_independent() -> None:
    pairs = [
        ("In 2019, he won the cup.", "He won the cup in 2019."),
        ("The meeting was postponed because of the storm.", "A storm made them delay the meeting."),
        ("The cat, which was black, sat on the mat.", "The cat sat on the mat."),
    ]
    first = [r.to_dict() for r in analyze_many(pairs)]
    again = [r.to_dict() for r in analyze_many(list(reversed(pairs)))][::-1]
    alone = [analyze(s, o).to_dict() for s, o in pairs]
    assert first == again == alone
    for result in first:
        keys = [Edit.from_dict(e).sort_key() for e in result["edits"]]
        assert keys == sorted(keys)


LONG = " ".join(
    ["The committee, which met on Tuesday in the old town hall, decided that the bridge"
     " should be built before the first snow of winter."] * 13
)


@pytest.mark.parametrize(
    ("source", "output", "error"),
    [
        ("The cat sat.", "", None),
        ("The cat sat.", "   \u200b ", None),
        ("", "Something.", "source text is empty"),
        ("The cat sat.", "The cat sat. " * 30, None),
        (LONG, LONG[: len(LONG) // 3], None),
        ("\u041c\u043e\u0441\u043a\u0432\u0430 \u2014 \u0441\u0442\u043e\u043b\u0438\u0446\u0430.",
         "\u041c\u043e\u0441\u043a\u0432\u0430.", None),
        ("\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002",
         "\u6771\u4eac\u306f\u9996\u90fd\u3067\u3059\u3002", None),
        ("  He said \u2018hi\u2019  to   me.  ", "He said 'hi' to me.\n", None),
        ("x" * 30_000, "y", "text too long"),
    ],
)
def test_bad_inputs_give_sensible_results(source: str, output: str, error: str | None) -> None:
    [result] = analyze_many([(source, output)])
    if error is None:
        assert result.error is None
        assert rebuilds(source, output, result)
        json.dumps(result.to_dict())
    else:
        assert result.error is not None and error in result.error
        assert result.edits == []


def test_bad_pairs_do_not_spoil_the_batch() -> None:
    pairs: list[tuple[str, str]] = [
        ("The cat sat.", "The cat sat."),
        (None, "x"),  # type: ignore[list-item]
        ("a",),  # type: ignore[list-item]
        ("", ""),
        ("The cat, which was black, sat.", "The cat sat."),
    ]
    results = analyze_many(pairs)
    assert [r.error is None for r in results] == [True, False, False, False, True]
    assert results[4].category == "deletion"


def test_empty_output_is_a_deletion_of_everything() -> None:
    result = analyze("The cat sat.", "")
    assert result.category == "deletion"
    assert result.edits == [Edit("deletion", source_span=(0, 12), anchor=0)]
    assert result.features["compression_ratio"] == 0.0


def test_long_input_is_analysed() -> None:
    assert LONG.count(" ") >= 250
    result = analyze(LONG, LONG.replace("committee", "group"))
    assert result.error is None
    assert len(result.edits) == 13
    assert all(e.type == "paraphrase" for e in result.edits)
