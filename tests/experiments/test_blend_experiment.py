"""The blend experiment's selection never reads a test set: its guard refuses every test-set file, and the
selection runs under it."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import blend_experiment as experiment


@pytest.mark.parametrize("name", ["simpeval_2022.csv", "simpDA_2022.csv", "simplikert_2022.csv",
                                  "simplicity_DA.csv", "simpeval_2022_references.src", "test-s22--sari.json"])
def test_the_guard_refuses_every_test_set_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text("x")
    allowed = tmp_path / "simpeval_past.csv"
    allowed.write_text("y")
    with experiment.no_test_sets():
        assert allowed.read_text() == "y" and open(allowed).read() == "y"  # noqa: SIM115
        for read in (lambda: open(path).read(), path.read_text, lambda: path.open().read(),  # noqa: SIM115
                     lambda: open(str(path), "rb").read()):  # noqa: SIM115
            with pytest.raises(experiment.TestSetRead, match=name):
                read()
    assert path.read_text() == "x"  # the guard is gone after the block


@pytest.mark.data
@pytest.mark.parametrize("cv", ["sources", "sources-systems"])
def test_selection_runs_under_the_guard_and_a_leak_fails_it(simpeval_data_dir: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch, cv: str) -> None:
    monkeypatch.setattr(experiment, "SUITE", ("fkgl",))  # no encoder: fast
    monkeypatch.setattr(experiment, "FEATURE_SETS", {"small": ("fkgl", "length", "compression")})
    experiment.compute_cache(tmp_path, "past", experiment.training_samples(simpeval_data_dir))
    result = experiment.select(simpeval_data_dir, tmp_path, folds=3, learner="ridge", cv=cv)
    # FKGL and two lengths order known systems better than new ones (about 0.10 against 0.04 here)
    assert result["chosen"]["features"] == "small" and result["chosen"]["cv_tau"] > (0.05 if cv == "sources" else 0.0)
    assert result["chosen"]["cv"] == cv
    assert set(result["singles_cv"]) == {"fkgl", *experiment.TEXT}

    from experiments.datasets import load_simpeval_2022

    leaky = experiment.training_samples

    def leaking(root: Path) -> list:
        load_simpeval_2022(root)  # a selection step that peeks at the test set
        return leaky(root)

    monkeypatch.setattr(experiment, "training_samples", leaking)
    with pytest.raises(experiment.TestSetRead, match="simpeval_2022"):
        experiment.select(simpeval_data_dir, tmp_path, folds=3, learner="ridge", cv=cv)


# --- the third configuration: a LENS component and the like-2022 criterion ----------------------------------


def _fake_lens(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """LENS replaced by a stand-in (its score of an output: the output's length in words), so that the
    out-of-fold plumbing runs in seconds; returns the list of training pool sizes it was given."""
    from experiments import blend_lens

    pools: list[int] = []

    def train(pool: list, seed: int, lookup: object) -> tuple[object, dict]:
        pools.append(len(pool))
        return None, {"seconds": 0.0, "best_epoch": 1, "heldout_tau": None, "device": "cpu", "train": len(pool),
                      "heldout": 0}

    monkeypatch.setattr(blend_lens, "features", lambda cache, texts, test: None)
    monkeypatch.setattr(blend_lens, "train_lens_model", train)
    monkeypatch.setattr(blend_lens, "lens_scores", lambda model, lookup, items: [float(len(i.output.split()))
                                                                                 for i in items])
    return pools


def test_like_2022_scores_only_the_strong_systems_outputs() -> None:
    import numpy as np

    from metrics.lens.types import Sample

    samples = [Sample(source_id=f"s{i // 3}", output_id=str(i), complex="c", output="o", references=("r",), z=0.0,
                      ratings={"a": float(i % 3) * 40}) for i in range(6)]
    systems = ["T5-3B", "weak", "muss_untokenized"] * 2
    criterion = experiment.like_2022_criterion(samples, systems)
    rows = np.arange(6)
    # ratings 0, 40, 80 per source; the metric orders the two strong outputs (0 and 80) right and the weak one
    # (40) wrong: only the strong pair is counted
    assert criterion(rows, np.asarray([0.0, 100.0, 1.0] * 2)) == pytest.approx(1.0)
    assert criterion(np.asarray([1, 4]), np.asarray([0.0, 1.0])) is None  # no strong output held out


@pytest.mark.data
def test_lens_out_of_fold_scores_cover_every_training_output_and_run_under_the_guard(
        simpeval_data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from experiments import blend_lens

    pools = _fake_lens(monkeypatch)
    blend_lens.selection_scores(simpeval_data_dir, tmp_path, folds=3)
    import json

    stored = json.loads((tmp_path / "past--lens_select.json").read_text())
    items = experiment.training_samples(simpeval_data_dir)
    assert len(stored["scores"]) == len({experiment._key(s.complex, s.output, s.references) for s in items})
    assert len(pools) == 3 and all(p < 2400 for p in pools)  # each fold's LENS trains without its fold

    (tmp_path / "test-lens-features.pt").write_bytes(b"")

    def peeking(cache: Path, texts: list, test: bool) -> None:  # a selection step that reads test features
        (tmp_path / "test-lens-features.pt").read_bytes()

    monkeypatch.setattr(blend_lens, "features", peeking)
    with pytest.raises(experiment.TestSetRead, match="test-lens-features"):
        blend_lens.selection_scores(simpeval_data_dir, tmp_path, folds=3)


@pytest.mark.data
@pytest.mark.parametrize("cv", ["sources", "like-2022"])
def test_third_selection_reads_lens_under_the_guard_and_a_leak_fails_it(
        simpeval_data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cv: str) -> None:
    from experiments import blend_lens

    _fake_lens(monkeypatch)
    monkeypatch.setattr(experiment, "SUITE", ("fkgl",))  # no encoder: fast
    sets = {"small": ("fkgl", "length"), "small+lens": ("fkgl", "length", experiment.LENS),
            "lens": (experiment.LENS,)}
    experiment.compute_cache(tmp_path, "past", experiment.training_samples(simpeval_data_dir))
    blend_lens.selection_scores(simpeval_data_dir, tmp_path, folds=3)
    result = experiment.select(simpeval_data_dir, tmp_path, folds=3, learner="ridge", cv=cv, feature_sets=sets)
    assert result["chosen"]["cv"] == cv and result["chosen"]["features"] in sets
    assert {row["features"] for row in result["table"]} == set(sets) and experiment.LENS in result["singles_cv"]

    # a selection that reads a test set's cached LENS scores (here: selection's scores swapped for a seed's
    # test-set file) fails
    (tmp_path / "test-s22--lens_seed0.json").write_text((tmp_path / "past--lens_select.json").read_text())
    real = experiment.cache_file
    monkeypatch.setattr(experiment, "cache_file", lambda cache, dataset, component: real(
        cache, "s22" if component == "lens_select" else dataset, "lens_seed0" if component == "lens_select"
        else component))
    with pytest.raises(experiment.TestSetRead, match="test-s22--lens_seed0"):
        experiment.select(simpeval_data_dir, tmp_path, folds=3, learner="ridge", cv=cv, feature_sets=sets)
