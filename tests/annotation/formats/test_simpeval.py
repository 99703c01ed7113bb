"""The SimpEval reader on its own (no database): exact error messages, layout capture, released files.

Pinned before ``read_simpeval`` was split into steps, so the split is proven to keep its behaviour.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest

from annotation.formats import FormatError
from annotation.formats.simpeval import SimpEvalFile, read_simpeval

HEADER = "original_id,original,generation,system,sentence_type,rating_1,rating_2,rating_1_zscore,rating_2_zscore"
ROW = "1,The cat sat.,Cat sat.,A,Deletions,80,70,0.5,0.25"


def read(text: str) -> SimpEvalFile:
    return read_simpeval(io.StringIO(text, newline=""), name="t.csv")


def error(text: str) -> str:
    with pytest.raises(FormatError) as info:
        read(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "t.csv, line 1: the file is empty"),
        ("x" * 200_000 + "\n", "t.csv, line 1: not a readable CSV (field larger than field limit (131072))"),
        ("original_id,original,system,rating_1\n1,a,b,5\n", "t.csv, line 1: missing required column(s): generation"),
        ("original_id,original,generation,system\n1,a,b,c\n",
         "t.csv, line 1: no rating columns (rating_1, rating_2, ...)"),
        ("original_id,original,generation,system,rating_1,rating_3\n1,a,b,c,1,2\n",
         "t.csv, line 1: rating columns must be numbered rating_1..rating_N without gaps"),
        ("original_id,original,generation,system,rating_1,rating_2,rating_1_zscore,rating_2_z_score\n",
         "t.csv, line 1: z-score columns mix the _zscore and _z_score spellings"),
        ("original_id,original,generation,system,rating_1,rating_2,rating_1_zscore\n",
         "t.csv, line 1: expected z-score columns for rating_1..rating_2"),
        (HEADER + "\n", "t.csv, line 1: no data rows"),
        (HEADER + "\n\n,,,,,,,,\n", "t.csv, line 3: no data rows"),
        (HEADER + "\n" + ROW + "\n1,x,y\n", "t.csv, line 3: expected 9 fields, found 3"),
        (HEADER + "\n" + ROW + "\n" + "x" * 200_000 + "\n",
         "t.csv, line 3: malformed CSV (field larger than field limit (131072))"),
        (HEADER + "\n1,The cat sat.,Cat sat., ,Deletions,80,70,0.5,0.25\n",
         "t.csv, line 2, column 'system': empty value"),
        (HEADER + "\n1,The cat sat.,Cat sat.,A,Deletions,80,x,0.5,0.25\n",
         "t.csv, line 2, column 'rating_2': 'x' is not a number"),
        (HEADER + "\n1,The cat sat.,Cat sat.,A,Deletions,80,inf,0.5,0.25\n",
         "t.csv, line 2, column 'rating_2': 'inf' is not a finite number"),
        (HEADER + "\n1,The cat sat.,Cat sat.,A,Deletions,-1,70,0.5,0.25\n",
         "t.csv, line 2, column 'rating_1': rating -1 is outside 0-100"),
        (HEADER + "\n1,The cat sat.,Cat sat.,A,Deletions,,70,0.5,0.25\n",
         "t.csv, line 2, column 'rating_1_zscore': a z-score without its rating"),
        (HEADER + "\n1,The cat sat.,Cat sat.,A,Deletions,80,70,0.5,zz\n",
         "t.csv, line 2, column 'rating_2_zscore': 'zz' is not a number"),
        (HEADER + "\n" + ROW + "\n" + ROW + "\n",
         "t.csv, line 3: duplicate row for source '1' and system 'A' (first on line 2)"),
        (HEADER + "\n" + ROW + "\n1,The dog sat.,Dog sat.,B,Deletions,80,70,0.5,0.25\n",
         "t.csv, line 3, column 'original': source '1' has a different original text than on line 2"),
        (HEADER + "\n1,The cat sat.,Cat sat.,A,Splits,80,70,0.5,0.25\n",
         "t.csv, line 2, column 'sentence_type': unknown sentence_type 'Splits' "
         "(expected Splittings, Deletions, Paraphrases)"),
    ],
)
def test_errors_name_file_line_and_column(text: str, message: str) -> None:
    assert error(text) == message


def test_rows_and_layout_are_captured() -> None:
    text = (
        "\ufeffid, original_id,original,generation,processed_generation,system,rating_2,rating_1,"
        "rating_1_z_score,rating_2_z_score\n"
        "7,1,\"The cat sat, tired.\",\"Cat sat.\",cat sat.,A,80.5,70,0.5,\n"
        "\n"
        "8,1,\"The cat sat, tired.\",,,B,,nan,,\n"
    )
    parsed = read(text)
    assert parsed.layout == {
        "columns": ["id", "original_id", "original", "generation", "processed_generation", "system",
                    "rating_2", "rating_1", "rating_1_z_score", "rating_2_z_score"],
        "n_ratings": 2,
        "z_suffix": "z_score",
        "rating_style": "float",
    }
    first, second = parsed.rows
    assert (first.line, first.row_id, first.original_id, first.system, first.category) == (2, "7", "1", "A", None)
    assert first.processed_generation == "cat sat."
    assert (first.ratings, first.zscores) == ((70.0, 80.5), (0.5, None))
    assert (second.line, second.generation, second.ratings, second.zscores) == (4, "", (None, None), (None, None))


def test_integer_ratings_without_zscores_keep_the_int_style() -> None:
    parsed = read("original_id,original,generation,system,sentence_type,rating_1\n1,a,b,c,Paraphrases,5\n")
    assert (parsed.rating_style, parsed.z_suffix, parsed.n_ratings) == ("int", "zscore", 1)
    assert parsed.rows[0].category == "paraphrase"
    assert parsed.rows[0].zscores == (None,)


def _digest(parsed: SimpEvalFile) -> str:
    return hashlib.sha256(repr((parsed.layout, parsed.rows)).encode()).hexdigest()


@pytest.mark.data
@pytest.mark.parametrize(
    ("name", "rows", "layout", "digest"),
    [
        ("simpeval_2022.csv", 360, {"n_ratings": 3, "z_suffix": "zscore", "rating_style": "float"},
         "2b011dd16f74bc86f864b9d6a26daaa5a2800737909c75574b379609aaaaa4c8"),
        ("simpeval_past.csv", 2400, {"n_ratings": 5, "z_suffix": "z_score", "rating_style": "int"},
         "05bf7f0dd9ecd5a2ae8a2d6f2dfc5eb3cb79552bbc18e8e229e90faf2933901a"),
    ],
)
def test_released_files(simpeval_data_dir: Path, name: str, rows: int, layout: dict[str, object], digest: str) -> None:
    """Every parsed field of the released files, pinned by a digest of their repr."""
    path = simpeval_data_dir / "simpeval" / name
    with path.open(newline="", encoding="utf-8") as handle:
        parsed = read_simpeval(handle, name=name)
    assert len(parsed.rows) == rows
    assert {k: v for k, v in parsed.layout.items() if k != "columns"} == layout
    assert _digest(parsed) == digest
