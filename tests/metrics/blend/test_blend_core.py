"""The blend's pure core: its learners recover a known combination, cross-validation never splits a source,
and a loaded blend refuses to score once a component it read has changed."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from metrics.blend import features
from metrics.blend.kind import BLEND_FILE, BlendConfig, fit_blend
from metrics.blend.learners import Candidate, candidates, cross_validate, fit, grouped_folds, predict
from metrics.learned.config import ConfigError
from metrics.learned.kinds import StaleComponentError, TrainingInputs, get_kind, load
from metrics.lens.types import Sample
from metrics.suite import Item


def known_combination(n_sources: int = 30, per_source: int = 5, seed: int = 0) -> list[Sample]:
    """Outputs whose z is exactly 0.5 * words - 4 * compression + a source offset (+ small noise)."""
    rng = random.Random(seed)
    samples = []
    for s in range(n_sources):
        complex_text = " ".join(f"w{rng.randrange(50)}" for _ in range(rng.randrange(12, 20)))
        offset = rng.uniform(-1, 1)
        for o in range(per_source):
            output = " ".join(f"v{rng.randrange(50)}" * rng.randrange(1, 3) for _ in range(rng.randrange(3, 15)))
            z = 0.5 * len(output.split()) - 4 * len(output) / len(complex_text) + offset + rng.gauss(0, 0.01)
            samples.append(Sample(f"s{s}", f"o{o}", complex_text, output, ("ref",), z,
                                  ratings={"r": 50 + 10 * z}))
    return samples


def original_units(model: dict, index: int) -> float:
    return float(model["weights"][index]) / float(model["scale"][index])


@pytest.mark.parametrize("learner", ["ridge", "pairwise"])
def test_the_linear_learners_recover_the_known_weights(learner: str) -> None:
    samples = known_combination()
    components = [features.text_component("length"), features.text_component("compression")]
    x = features.feature_matrix(components, samples)
    model = fit(Candidate(learner, 1e-6), x, np.asarray([s.z for s in samples]), [s.source_id for s in samples])
    # the pairwise learner only sees within-source differences, so the source offsets do not bias it;
    # ridge reads them as noise (uncorrelated with the features) and still recovers the slopes
    tolerance = 0.02 if learner == "pairwise" else 0.1
    assert original_units(model, 0) == pytest.approx(0.5, abs=tolerance)
    assert original_units(model, 1) == pytest.approx(-4.0, abs=40 * tolerance)


def test_the_kernel_learner_fits_a_non_linear_target() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(300, 2))
    y = np.sin(2 * x[:, 0]) + x[:, 1] ** 2
    groups = [str(i // 5) for i in range(300)]
    kernel = fit(Candidate("kernel", 0.01, 0.5), x[:250], y[:250], groups[:250])
    ridge = fit(Candidate("ridge", 0.01), x[:250], y[:250], groups[:250])
    error = {name: float(np.mean((predict(m, x[250:]) - y[250:]) ** 2)) for name, m in (("k", kernel), ("r", ridge))}
    assert error["k"] < 0.1 < error["r"]


def test_grouped_folds_never_split_a_source() -> None:
    groups = [f"s{i % 7}" for i in range(70)]
    splits = grouped_folds(groups, 3, seed=4)
    assert sorted(int(i) for _, test in splits for i in test) == list(range(70))
    for train, test in splits:
        assert not {groups[i] for i in train} & {groups[i] for i in test}
    with pytest.raises(ValueError, match="at least 8 sources"):
        grouped_folds(groups, 8, seed=0)


def test_the_kind_trains_on_the_family_path_and_its_checkpoint_scores_the_combination(tmp_path: Path) -> None:
    samples = known_combination()
    kind = get_kind("blend")
    config = kind.config({"suite": "none", "text": "length,compression", "learned": False, "learner": "pairwise",
                          "folds": 3, "seed": 1})
    result = kind.train(config, TrainingInputs(train=samples[:120], heldout=samples[120:]), out_dir=tmp_path,
                        callbacks=())
    # one event per pairwise setting (cross-validated), then the final fit with its held-out figures
    assert len(result.history) == len(candidates("pairwise")) + 1 and result.history[-1]["best"]
    assert result.heldout["tau"]["all"] > 0.9 and result.heldout["learner"].startswith("pairwise")
    scorer = load(result.best_checkpoint)
    items = [Item(s.complex, s.output, s.references) for s in samples[120:]]
    values = [v for v, _ in scorer.score(items)]
    truth = [0.5 * len(s.output.split()) - 4 * len(s.output) / len(s.complex) for s in samples[120:]]
    assert np.corrcoef(values, truth)[0, 1] > 0.99
    model = json.loads((result.best_checkpoint / BLEND_FILE).read_text())["model"]
    assert original_units(model, 0) == pytest.approx(0.5, abs=0.02)


def test_a_changed_component_signature_refuses_to_score(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = known_combination(n_sources=8, per_source=3)
    kind = get_kind("blend")
    config = kind.config({"suite": "fkgl", "text": "length", "learned": False, "learner": "ridge", "folds": 2})
    result = kind.train(config, TrainingInputs(train=samples), out_dir=tmp_path, callbacks=())
    item = Item(samples[0].complex, samples[0].output, samples[0].references)
    assert len(load(result.best_checkpoint).score([item])) == 1

    monkeypatch.setattr(features, "TEXT_FEATURES_VERSION", "2")
    changed = "text:length was 'text:length|version:1', is 'text:length|version:2'"
    with pytest.raises(StaleComponentError, match=re.escape(changed)):
        load(result.best_checkpoint).score([item])
    monkeypatch.undo()

    from metrics.suite.fkgl import Fkgl  # e.g. the suite's version bumped: FKGL's signature changes

    monkeypatch.setattr(Fkgl, "signature", property(lambda self: "fkgl:changed"))
    with pytest.raises(StaleComponentError, match=r"suite:fkgl was .* is 'fkgl:changed'"):
        load(result.best_checkpoint).score([item])


def test_bad_options_name_the_option() -> None:
    with pytest.raises(ConfigError, match="suite: unknown rouge; choose among") as caught:
        BlendConfig.from_options({"suite": "sari,rouge"})
    assert caught.value.key == "suite"
    with pytest.raises(ConfigError, match="at least one metric"):
        BlendConfig.from_options({"suite": "none", "text": "none", "learned": False})
    with pytest.raises(ConfigError, match="folds"):
        BlendConfig.from_options({"folds": 1000})


def test_sources_systems_folds_hold_out_a_source_and_a_system_together() -> None:
    groups = [f"s{i // 6}" for i in range(60)]  # 10 sources x 6 systems
    systems = [f"sys{i % 6}" for i in range(60)]
    splits = grouped_folds(groups, 5, seed=3, systems=systems, system_folds=3)
    assert len(splits) == 15
    # every output is held out in exactly one cell
    assert sorted(int(i) for _, test in splits for i in test) == list(range(60))
    for train, test in splits:
        assert len(test) == 4 and len(train) == 32  # 2 sources x 2 systems; 8 sources x 4 systems
        assert not {groups[i] for i in train} & {groups[i] for i in test}
        assert not {systems[i] for i in train} & {systems[i] for i in test}
    with pytest.raises(ValueError, match="at least 7 systems"):
        grouped_folds(groups, 5, seed=0, systems=systems, system_folds=7)


def test_holding_out_systems_exposes_a_learner_that_memorised_the_systems() -> None:
    # the features identify the system and the rating is a per-system offset: a narrow kernel learns each
    # training system's offset, which scores well on new sources of known systems and not at all on new systems
    rng = np.random.default_rng(1)
    n_sources, n_systems = 40, 12
    codes, offsets = rng.normal(size=(n_systems, 3)), rng.normal(size=n_systems)
    groups = [f"s{i // n_systems}" for i in range(n_sources * n_systems)]
    systems = [f"sys{i % n_systems}" for i in range(n_sources * n_systems)]
    x = np.asarray([codes[i % n_systems] for i in range(len(groups))]) + rng.normal(scale=0.01, size=(len(groups), 3))
    y = np.asarray([offsets[i % n_systems] for i in range(len(groups))]) + rng.normal(scale=0.1, size=len(groups))

    def criterion(rows: np.ndarray, predicted: np.ndarray) -> float:
        return float(np.corrcoef(predicted, y[rows])[0, 1])

    memoriser = [Candidate("kernel", 0.01, 5.0)]
    by_source = cross_validate(memoriser, x, y, groups, folds=4, seed=0, criterion=criterion)[0].mean
    by_both = cross_validate(memoriser, x, y, groups, folds=4, seed=0, criterion=criterion, systems=systems,
                             system_folds=3)[0].mean
    assert by_source is not None and by_both is not None
    assert by_source > 0.9 and abs(by_both) < 0.5


def test_the_pairwise_blend_under_sources_systems_cv_recovers_a_within_source_ranking(tmp_path: Path) -> None:
    # large source offsets: only the within-source order follows the features, which the pairwise learner reads
    samples = [replace(s, z=s.z + 20 * int(s.source_id[1:]) % 7) for s in known_combination(per_source=6)]
    kind = get_kind("blend")
    config = kind.config({"suite": "none", "text": "length,compression", "learned": False, "learner": "pairwise",
                          "cv": "sources-systems", "folds": 3, "system_folds": 2, "seed": 2})
    result = kind.train(config, TrainingInputs(train=samples[:150], heldout=samples[150:]), out_dir=tmp_path,
                        callbacks=())
    assert result.heldout["cv"] == "sources-systems" and result.heldout["tau"]["all"] > 0.9
    assert len(result.history) == len(candidates("pairwise")) + 1
    # 3 source folds x 2 system folds: six cells per setting, each scoring held-out systems of held-out sources
    assert all(len(event["cv"]) == 6 for event in result.history[:-1])
    scorer = load(result.best_checkpoint)
    for source in {s.source_id for s in samples[150:]}:
        outputs = [s for s in samples[150:] if s.source_id == source]
        values = [v for v, _ in scorer.score([Item(s.complex, s.output, s.references) for s in outputs])]
        truth = [0.5 * len(s.output.split()) - 4 * len(s.output) / len(s.complex) for s in outputs]
        assert np.argsort(values).tolist() == np.argsort(truth).tolist()


def test_sources_systems_cv_with_one_system_falls_back_to_sources() -> None:
    samples = [replace(s, output_id="only") for s in known_combination(n_sources=12, per_source=3)]
    config = BlendConfig(suite="none", text="length", learned=False, learner="ridge", cv="sources-systems", folds=3)
    fitted = fit_blend(config, [features.text_component("length")], samples)
    assert fitted.cv == "sources"
    assert [len(r["folds"]) for r in fitted.cross_validation] == [3] * len(candidates("ridge"))  # type: ignore[arg-type]


def test_bad_cv_options_name_the_option() -> None:
    with pytest.raises(ConfigError, match="cv") as caught:
        BlendConfig.from_options({"cv": "systems"})
    assert caught.value.key == "cv"
    with pytest.raises(ConfigError, match="system_folds") as caught:
        BlendConfig.from_options({"system_folds": 1})
    assert caught.value.key == "system_folds"
    assert BlendConfig.from_options({"cv": "sources-systems", "system_folds": 4}).system_folds == 4
