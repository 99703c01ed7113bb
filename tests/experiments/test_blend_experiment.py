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
