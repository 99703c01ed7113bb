"""The LENS experiment sets read from the released files: sizes, targets, references, and the guards that
keep the test sets out of training."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import pytest

from experiments import datasets

pytestmark = pytest.mark.data


def test_training_sets_have_their_released_sizes_and_ten_asset_references(simpeval_data_dir: Path) -> None:
    past = datasets.load_simpeval_past(simpeval_data_dir)
    da = datasets.load_simplicity_da(simpeval_data_dir)
    ratings = datasets.load_asset_ratings(simpeval_data_dir)
    assert (len(past), len(da), len(ratings)) == (2400, 600, 100)
    assert len({s.source_id for s in past}) == 100
    assert all(len(s.references) == 10 for s in (*past, *da, *ratings))
    both = datasets.load_training(simpeval_data_dir, datasets.TRAIN_SETS)
    assert len(both) == 3100
    extra = [s.z for s in both if not s.source_id.startswith("past:")]
    assert abs(statistics.fmean(extra)) < 1.0  # each extra set standardised on its own


def test_standardising_gives_each_set_mean_zero_and_unit_spread(simpeval_data_dir: Path) -> None:
    values = [s.z for s in datasets.per_dataset_target(datasets.load_simplicity_da(simpeval_data_dir))]
    assert statistics.fmean(values) == pytest.approx(0.0, abs=1e-9)
    assert statistics.pstdev(values) == pytest.approx(1.0, abs=1e-9)


def test_the_test_set_has_one_reference_and_its_six_systems(simpeval_data_dir: Path) -> None:
    rows = datasets.load_simpeval_2022(simpeval_data_dir)
    assert len(rows) == 360 and all(len(sample.references) == 1 for sample, _ in rows)
    assert datasets.REFERENCE_SYSTEM in {system for _, system in rows} and len({s for _, s in rows}) == 6


def test_a_training_source_that_is_a_test_source_is_refused(simpeval_data_dir: Path) -> None:
    past = datasets.load_simpeval_past(simpeval_data_dir)
    test_sample, _ = datasets.load_simpeval_2022(simpeval_data_dir)[0]
    forbidden = datasets.test_texts(simpeval_data_dir)
    datasets.check_disjoint(past, forbidden)  # the released sets share no source
    leaked = [*past, replace(past[0], complex=test_sample.complex)]
    with pytest.raises(ValueError, match="1 training source"):
        datasets.check_disjoint(leaked, forbidden)
    with pytest.raises(ValueError, match="unknown training set"):
        datasets.load_training(simpeval_data_dir, ["past", "newsela"])


def test_held_out_sources_leave_training_whole(simpeval_data_dir: Path) -> None:
    samples = datasets.load_training(simpeval_data_dir, datasets.TRAIN_SETS)
    train, held = datasets.split_heldout(samples, 0.1, seed=0)
    held_sources = {s.complex for s in held}
    assert len(held_sources) == 10 and all(s.source_id.startswith("past:") for s in held)
    assert not held_sources & {s.complex for s in train}
    assert {len(s.references) for s in held} == {10}


def test_cross_validation_folds_partition_the_sources_and_never_train_on_their_own(
    simpeval_data_dir: Path,
) -> None:
    samples = datasets.load_training(simpeval_data_dir, datasets.TRAIN_SETS)
    folds = datasets.cross_validation_folds(samples, 5, seed=0)
    held_sources = [{s.complex for s in held} for _, held in folds]
    assert [len(sources) for sources in held_sources] == [20] * 5
    assert len(set().union(*held_sources)) == 100  # every source held out exactly once
    for (train, held), sources in zip(folds, held_sources, strict=True):
        assert not sources & {s.complex for s in train}  # nor Simplicity-DA's or ASSET's outputs on them
        assert len(held) == 20 * 24
    assert folds[0][1] != datasets.cross_validation_folds(samples, 5, seed=1)[0][1]
    with pytest.raises(ValueError, match="at least 2 folds"):
        datasets.cross_validation_folds(samples, 1)


def test_the_past_like_2022_view_rates_six_systems_against_a_rated_human_reference(
    simpeval_data_dir: Path,
) -> None:
    past = datasets.load_simpeval_past(simpeval_data_dir)
    systems = datasets.simpeval_past_systems(simpeval_data_dir)
    like = datasets.past_like_2022(past, systems)
    assert len(like) == 600 and {systems[s.output_id] for s in like} == set(datasets.PAST_LIKE_2022_SYSTEMS)
    assert all(len(s.references) == 1 for s in like)
    twins = [s for s in like if systems[s.output_id] == datasets.PAST_LIKE_2022_REFERENCE]
    assert len(twins) == 100 and all(s.output == s.references[0] for s in twins)  # as Human 1 Writing in 2022
    one_source = [s for s in past if s.source_id == past[0].source_id]
    without_reference = [s for s in one_source if systems[s.output_id] != datasets.PAST_LIKE_2022_REFERENCE]
    assert datasets.past_like_2022(without_reference, systems) == []
