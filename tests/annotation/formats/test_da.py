"""The multi-aspect reader on its own (no database): both layouts, scales, and errors naming file, line, column."""

from __future__ import annotations

import io

import pytest

from annotation.formats import FormatError
from annotation.formats.da import CROWD, SCALES, SIMPLICITY_DA, DAFile, read_da

DA_HEADER = (
    "sent_id,sys_name,orig_sent,simp_sent,sys_type,fluency,fluency_zscore,meaning,meaning_zscore,"
    "simplicity,simplicity_zscore"
)
DA_ROWS = [
    '7,ACCESS,"The cat, tired, sat.",The cat sat.,NeuralSeq2Seq,77.4,0.15,77.33333333,0.53,71.3,0.61',
    '7,Hybrid,"The cat, tired, sat.",Cat sat tired.,Semantics+PBMT,40,-0.9,35.5,-1.1,30,-0.8',
    "8,ACCESS,A dog ran.,A dog ran.,NeuralSeq2Seq,99.9,1.2,100,1.3,5.5,-1.5",
]
CROWD_HEADER = (
    "WorkerId,Input.id,Input.original,Input.simplified,Input.system,Answer.adequacy,Answer.fluency,Answer.simplicity"
)
LIKERT_ROWS = [
    "0,40,The cat sat.,Cat sat.,T5,5,5,2",
    "1,40,The cat sat.,Cat sat.,T5,4,3,-1",
    "0,40,The cat sat.,The cat sat.,Muss,3,4,0",
    "2,41,A dog ran.,Dog ran.,T5,1,2,-2",
]
DA100_ROWS = [
    "0,40,The cat sat.,Cat sat.,T5,100,91,80",
    "1,40,The cat sat.,Cat sat.,T5,72.5,60,47",
    "0,41,A dog ran.,Dog ran.,T5,0,30,3",
]


def read(text: str, name: str = "t.csv", scales: dict[str, str] | None = None) -> DAFile:
    return read_da(io.StringIO(text, newline=""), name=name, scales=scales)


def lines(header: str, rows: list[str]) -> str:
    return "\n".join([header, *rows]) + "\n"


def error(text: str, scales: dict[str, str] | None = None) -> FormatError:
    with pytest.raises(FormatError) as info:
        read(text, scales=scales)
    return info.value


def test_simplicity_da_layout_keeps_aspects_raw_and_released_z():
    parsed = read(lines(DA_HEADER, DA_ROWS))
    assert parsed.layout == SIMPLICITY_DA
    assert parsed.aspect_names == ["fluency", "meaning", "simplicity"]
    assert [(a.column, a.z_column, a.scale) for a in parsed.aspects] == [
        ("fluency", "fluency_zscore", "0..100"), ("meaning", "meaning_zscore", "0..100"),
        ("simplicity", "simplicity_zscore", "0..100"),
    ]
    first = parsed.rows[0]
    assert (first.line, first.source_id, first.system, first.rater, first.system_type) == (
        2, "7", "ACCESS", "", "NeuralSeq2Seq")
    assert first.original == "The cat, tired, sat."
    assert first.ratings == {"fluency": 77.4, "meaning": 77.33333333, "simplicity": 71.3}
    assert first.zscores == {"fluency": 0.15, "meaning": 0.53, "simplicity": 0.61}
    assert parsed.max_raters_per_output == 1
    assert list(parsed.source_texts) == ["7", "8"] and not parsed.ambiguous_sources()
    assert parsed.layout_facts()["aspects"][0] == {
        "name": "fluency", "column": "fluency", "z_column": "fluency_zscore", "scale": "0..100"}


def test_crowd_layout_has_one_row_per_worker_and_infers_likert_scales():
    parsed = read(lines(CROWD_HEADER, LIKERT_ROWS))
    assert parsed.layout == CROWD
    # SimpLikert: fluency and adequacy 1-5, simplicity -2..2 (LENS paper, Table 7).
    assert {a.name: a.scale for a in parsed.aspects} == {"adequacy": "1..5", "fluency": "1..5", "simplicity": "-2..2"}
    assert all(a.z_column is None for a in parsed.aspects)
    assert [r.rater for r in parsed.rows] == ["0", "1", "0", "2"]
    assert parsed.rows[1].ratings == {"adequacy": 4.0, "fluency": 3.0, "simplicity": -1.0}
    assert parsed.rows[1].zscores == {}
    assert parsed.max_raters_per_output == 2


def test_crowd_layout_on_the_continuous_scale_ignores_other_mturk_columns():
    header = "HITId," + CROWD_HEADER + ",Approve"
    rows = [f"H{i}," + row + ",x" for i, row in enumerate(DA100_ROWS)]
    parsed = read(lines(header, rows))
    assert {a.name: a.scale for a in parsed.aspects} == {
        "adequacy": "0..100", "fluency": "0..100", "simplicity": "0..100"}
    assert parsed.rows[1].ratings["adequacy"] == 72.5


def test_a_given_scale_wins_over_inference():
    parsed = read(lines(CROWD_HEADER, LIKERT_ROWS), scales={"adequacy": "0..100"})
    assert {a.name: a.scale for a in parsed.aspects}["adequacy"] == "0..100"
    assert "unknown scale '1-7'" in str(error(lines(CROWD_HEADER, LIKERT_ROWS), scales={"fluency": "1-7"}))
    assert "which the file does not have" in str(error(lines(CROWD_HEADER, LIKERT_ROWS), scales={"grammar": "1..5"}))


def test_a_source_with_two_original_texts_is_reported_not_refused():
    rows = [*LIKERT_ROWS, "3,40,The  cat sat. ,Cat sat.,T5,5,5,1", "4,40,The cat sat down.,Cat sat.,T5,5,5,1"]
    parsed = read(lines(CROWD_HEADER, rows))
    texts = parsed.source_texts["40"]
    # Whitespace differences are the same text; a real difference is a second variant.
    assert [(t.text, t.line, t.rows) for t in texts] == [("The cat sat.", 2, 4), ("The cat sat down.", 7, 1)]
    assert list(parsed.ambiguous_sources()) == ["40"]


def test_blank_cells_are_missing_ratings_and_empty_outputs_are_kept():
    rows = ["0,40,The cat sat.,,T5,5,,2"]
    parsed = read(lines(CROWD_HEADER, rows))
    assert parsed.rows[0].ratings == {"adequacy": 5.0, "simplicity": 2.0}
    assert parsed.warnings == ["1 empty output(s), kept as rated: line 2"]


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("", 1, None, "the file is empty"),
        ("a,b,c\n1,2,3\n", 1, None, "not a multi-aspect rating file"),
        (lines(CROWD_HEADER.replace("Input.system,", ""), ["0,40,a,b,5,5,2"]), 1, None,
         "missing required column(s): Input.system"),
        (lines(DA_HEADER.replace("sys_name,", ""), ["7,a,b,c,1,1,1,1,1,1"]), 1, None,
         "missing required column(s): sys_name"),
        (lines("WorkerId,Input.id,Input.original,Input.simplified,Input.system", ["0,1,a,b,c"]), 1, None,
         "no aspect columns (Answer.<aspect>)"),
        (lines("sent_id,sys_name,orig_sent,simp_sent,fluency,meaning_zscore", ["1,a,b,c,5,1"]), 1, None,
         "z-score column(s) without their rating column: meaning_zscore"),
        (lines("sent_id,sys_name,orig_sent,simp_sent,fluency,fluency", ["1,a,b,c,5,5"]), 1, None,
         "column(s) named twice: fluency"),
        (lines(CROWD_HEADER, []), 1, None, "no data rows"),
        (lines(CROWD_HEADER, [LIKERT_ROWS[0], "1,40,The cat sat.,Cat sat.,T5,4,x,1"]), 3, "Answer.fluency",
         "'x' is not a number"),
        (lines(CROWD_HEADER, [LIKERT_ROWS[0], "1,40,The cat sat.,Cat sat.,T5,4,inf,1"]), 3, "Answer.fluency",
         "'inf' is not a finite number"),
        (lines(CROWD_HEADER, [LIKERT_ROWS[0], "1,40,The cat sat.,Cat sat.,T5,4,3"]), 3, None,
         "expected 8 fields, found 7"),
        (lines(CROWD_HEADER, [LIKERT_ROWS[0], " ,40,The cat sat.,Cat sat.,T5,4,3,1"]), 3, "WorkerId",
         "empty value"),
        (lines(CROWD_HEADER, [LIKERT_ROWS[0], "0,40,The cat sat.,Cat sat.,T5,4,3,1"]), 3, None,
         "duplicate rating of source '40', system 'T5' by rater '0' (first on line 2)"),
        (lines(CROWD_HEADER, [LIKERT_ROWS[0], "1,40,The cat sat.,Cat sits.,T5,4,3,1"]), 3, None,
         "system 'T5' has a different output for source '40' than on line 2"),
        (lines(DA_HEADER, [DA_ROWS[0], DA_ROWS[0].replace("77.4", "70")]), 3, None,
         "duplicate rating of source '7', system 'ACCESS' (first on line 2)"),
        (lines(DA_HEADER, ["7,A,o,s,t,,0.5,1,1,1,1"]), 2, "fluency_zscore", "a z-score without its rating"),
        # Wrong scale: a rating on none of the known scales, and one off the scale its aspect's others are on.
        (lines(CROWD_HEADER, [*DA100_ROWS, "5,42,x,y,T5,150,50,50"]), 5, "Answer.adequacy",
         "rating 150 is on none of the known scales (1..5, -2..2, 0..100)"),
        (lines(CROWD_HEADER, [*LIKERT_ROWS, "5,42,x,y,T5,4.5,4,1"]), 6, "Answer.adequacy",
         "rating 4.5 is not on the 1..5 scale (whole points only) of the other ratings of adequacy"),
        (lines(CROWD_HEADER, [*LIKERT_ROWS, "5,42,x,y,T5,4,4,3"]), 6, "Answer.simplicity",
         "rating 3 is not on the -2..2 scale (whole points only) of the other ratings of simplicity"),
        (lines(CROWD_HEADER, [*DA100_ROWS, "5,42,x,y,T5,-1,50,50"]), 5, "Answer.adequacy",
         "rating -1 is not on the 0..100 scale of the other ratings of adequacy"),
    ],
)
def test_bad_input_names_file_line_and_column(text, line, column, message):
    exc = error(text)
    assert (exc.file, exc.line, exc.column) == ("t.csv", line, column)
    assert message in str(exc)


def test_a_given_scale_is_checked():
    exc = error(lines(CROWD_HEADER, DA100_ROWS), scales={"fluency": "1..5"})
    assert (exc.line, exc.column) == (2, "Answer.fluency")
    assert str(exc) == (
        "t.csv, line 2, column 'Answer.fluency': "
        "rating 91 is not on the 1..5 scale (whole points only) given of fluency"
    )


def test_scales_hold_their_bounds():
    by_name = {s.name: s for s in SCALES}
    assert by_name["1..5"].holds(1) and by_name["1..5"].holds(5) and not by_name["1..5"].holds(0)
    assert not by_name["1..5"].holds(2.5) and by_name["0..100"].holds(2.5)
    assert by_name["-2..2"].holds(-2) and not by_name["-2..2"].holds(-3)


def test_released_files_read(simpeval_data_dir):
    def of(path: str) -> DAFile:
        with (simpeval_data_dir / path).open(newline="", encoding="utf-8") as handle:
            return read_da(handle, name=path)

    wiki = of("simplicity_da/simplicity_DA.csv")
    assert (wiki.layout, len(wiki.rows), len(wiki.source_texts)) == (SIMPLICITY_DA, 600, 302)
    assert {a.name: (a.scale, a.z_column) for a in wiki.aspects} == {
        "fluency": ("0..100", "fluency_zscore"), "meaning": ("0..100", "meaning_zscore"),
        "simplicity": ("0..100", "simplicity_zscore")}
    da = of("simpeval/simpDA_2022.csv")
    assert (da.layout, len(da.rows), da.max_raters_per_output) == (CROWD, 1080, 3)
    assert {a.name: a.scale for a in da.aspects} == {"adequacy": "0..100", "fluency": "0..100", "simplicity": "0..100"}
    likert = of("simpeval/simplikert_2022.csv")
    assert {a.name: a.scale for a in likert.aspects} == {"adequacy": "1..5", "fluency": "1..5", "simplicity": "-2..2"}
    # Both crowd files give source 21 two different originals (one fixed a typo).
    assert list(da.ambiguous_sources()) == ["21"] and list(likert.ambiguous_sources()) == ["21"]
