"""Clean selection (issue 47): the guard that fails when a test-set file is read while choosing, the folds
grouped by SimpEval_past source, and Simplicity-DA's held-out subset."""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import pytest

from experiments import datasets
from experiments.selection import (
    SIMPLICITY_DA_HELDOUT,
    TEST_SET_FILES,
    SelectionLeak,
    past_source_folds,
    selection_guard,
    simplicity_da_heldout,
)


@pytest.fixture
def fake_root(tmp_path: Path) -> Path:
    """A data folder with every test-set file and one training file, all of our own writing."""
    for name in (*TEST_SET_FILES, "simpeval/simpeval_past.csv"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("a,b\n1,2\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("name", TEST_SET_FILES)
def test_the_guard_fails_when_selection_reads_a_test_set_file(fake_root: Path, name: str) -> None:
    path = fake_root / name
    readers = [
        lambda: open(path).read(),  # noqa: SIM115 - the guard is what is tested
        lambda: path.read_text(encoding="utf-8"),
        lambda: list(csv.reader(path.open(newline=""))),
        lambda: os.close(os.open(path, os.O_RDONLY)),
        lambda: open(fake_root / "simpeval" / ".." / name, "rb").read(),  # noqa: SIM115 - another spelling
    ]
    with selection_guard(fake_root):
        for read in readers:
            with pytest.raises(SelectionLeak, match=re.escape(name.rsplit("/", 1)[-1])):
                read()
    assert path.read_text(encoding="utf-8") == "a,b\n1,2\n"  # after selection the test sets open again


def test_the_guard_lets_selection_read_the_training_data(fake_root: Path) -> None:
    with selection_guard(fake_root) as log:
        text = (fake_root / "simpeval" / "simpeval_past.csv").read_text(encoding="utf-8")
    assert text.startswith("a,b") and log.opened == [os.path.realpath(fake_root / "simpeval" / "simpeval_past.csv")]


@pytest.mark.data
def test_selection_on_the_released_files_reads_no_test_set(simpeval_data_dir: Path) -> None:
    with selection_guard(simpeval_data_dir) as log:
        past = datasets.load_simpeval_past(simpeval_data_dir)
        folds = past_source_folds(past, 5, seed=0)
        with pytest.raises(SelectionLeak, match="simpeval_2022_references"):
            datasets.load_simpeval_2022(simpeval_data_dir)
        with pytest.raises(SelectionLeak, match=r"simplicity_DA\.csv"):
            simplicity_da_heldout(simpeval_data_dir, past)
        with pytest.raises(SelectionLeak):
            datasets.load_training(simpeval_data_dir)  # its disjointness check reads the test sets' sources
    assert log.opened and not set(log.opened) & log.forbidden
    held_sources = [{s.source_id for s in held} for _, held in folds]
    assert sorted(len(h) for h in held_sources) == [20] * 5 and set().union(*held_sources) == {
        s.source_id for s in past}
    for (train, held), sources in zip(folds, held_sources, strict=True):
        assert not sources & {s.source_id for s in train} and len(train) + len(held) == len(past)


@pytest.mark.data
def test_simplicity_da_heldout_has_434_outputs_on_sources_simpeval_past_lacks(simpeval_data_dir: Path) -> None:
    past = datasets.load_simpeval_past(simpeval_data_dir)
    heldout = simplicity_da_heldout(simpeval_data_dir, past)
    assert len(heldout) == SIMPLICITY_DA_HELDOUT == 434
    assert len({row.source_id for row in heldout}) == 220
    past_sources = {" ".join(s.complex.split()) for s in past}
    assert not {" ".join(row.complex.split()) for row in heldout} & past_sources
    assert len(datasets.load_simplicity_da_aspects(simpeval_data_dir)) - len(heldout) == 166  # the shared ones
