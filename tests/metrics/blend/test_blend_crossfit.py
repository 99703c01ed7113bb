"""The blend's cross-fitting in its pure core: a learned component that memorised the blend's own training
ratings is read out of fold (crossfit=auto), so the blend does not lean on it, while crossfit=off reads it
in sample, leans on it and fails on new sources; and which blends score an empty output."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from annotation.rules import sentence_key
from metrics.blend.kind import BLEND, BLEND_FILE, BlendConfig
from metrics.learned.callbacks import Callback, ProgressEvent, TrainingCancelled, TrainResult
from metrics.learned.checkpoint import read_metadata, write_checkpoint
from metrics.learned.config import ConfigError, LearnedConfig, Rule
from metrics.learned.kinds import (
    LearnedData,
    LearnedKind,
    LearnedTraining,
    Scored,
    Scorer,
    TrainingInputs,
    Triple,
    VersionInfo,
    load,
    register_kind,
    unregister_kind,
)
from metrics.learned.training import BEST_DIR
from metrics.lens.types import Sample
from metrics.suite import SUITE_VERSION, Item
from tests.metrics.blend.test_blend_core import known_combination

MEMO_FILE = "memo.json"


def memo_key(complex_text: str, output: str) -> str:
    return f"{sentence_key(complex_text)}\t{sentence_key(output)}"


@dataclass(frozen=True)
class MemoConfig(LearnedConfig):
    seed: int = field(default=0, metadata={"rule": Rule("int")})
    heldout_fraction: float = field(default=0.0, metadata={"rule": Rule("float", minimum=0, maximum=0.5)})
    encoder: str = field(default="none", metadata={"rule": Rule("str")})
    device: str | None = field(default=None, metadata={"rule": Rule("str", optional=True, settable=False)})


class MemoScorer:
    """The memorised z of an output it trained on, seeded noise of any other."""

    def __init__(self, memo: dict[str, float]) -> None:
        self.memo = memo

    def score(self, items: Sequence[Triple]) -> list[Scored]:
        out: list[Scored] = []
        for item in items:
            key = memo_key(item.complex, item.output)
            noise = random.Random(hashlib.sha256(key.encode()).hexdigest()).gauss(0, 1)
            out.append((self.memo.get(key, noise), {}))
        return out


@dataclass(frozen=True)
class MemoKind(LearnedKind):
    """A learned kind that memorises its training targets: perfect in sample, noise out of sample."""

    trainings: list[int] = field(default_factory=list, compare=False)

    def train(self, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
              callbacks: Sequence[Callback]) -> TrainResult:
        self.trainings.append(len(inputs.train))
        best = Path(out_dir) / BEST_DIR
        write_checkpoint(best, kind=self.name, config=config.to_dict(), modules={}, encoder=None,
                         encoder_name="none")
        memo = {memo_key(s.complex, s.output): s.z for s in [*inputs.train, *inputs.heldout]}
        (best / MEMO_FILE).write_text(json.dumps(memo))
        return TrainResult(best_checkpoint=best, best_epoch=1, heldout={}, train_seconds=0.0, device="cpu")

    def load(self, path: Path, *, device: str | None = None, precision: str = "fp32") -> Scorer:
        return MemoScorer(json.loads((Path(path) / MEMO_FILE).read_text()))


@pytest.fixture
def memo() -> Iterator[MemoKind]:
    kind = MemoKind("memo", "Memo", MemoConfig)
    register_kind(kind)
    yield kind
    unregister_kind("memo")


def memo_version(kind: MemoKind, samples: Sequence[Sample], out_dir: Path, pk: int = 7,
                 ) -> tuple[VersionInfo, LearnedTraining]:
    """A memo version trained on ``samples``, and what the product would say it trained on."""
    config = MemoConfig()
    inputs = TrainingInputs(train=list(samples))
    result = kind.train(config, inputs, out_dir=out_dir, callbacks=())
    kind.trainings.clear()
    info = VersionInfo(pk=pk, encoder="none", encoder_identity={}, seed=0, k=1, hyperparameters=config.to_dict(),
                       checkpoint_path=str(result.best_checkpoint), serving_precision="fp32",
                       suite_version=SUITE_VERSION)
    training = LearnedTraining(source_keys=frozenset(sentence_key(s.complex) for s in samples),
                               data=lambda: LearnedData(config, inputs))
    return info, training


def blend_on(samples: Sequence[Sample], heldout: Sequence[Sample], info: VersionInfo, training: LearnedTraining,
             out_dir: Path, callbacks: Sequence[Callback] = (), **options: object) -> TrainResult:
    config = BLEND.config({"suite": "none", "text": "length,compression", "learner": "ridge", "folds": 3,
                           "seed": 1, **options})  # type: ignore[dict-item]
    inputs = TrainingInputs(train=samples, heldout=heldout, learned=[("memo", info)],
                            learned_training={info.pk: training})
    return BLEND.train(config, inputs, out_dir=out_dir, callbacks=callbacks)


def fidelity_on_new_sources(result: TrainResult) -> float:
    """Correlation of the blend's scores of new sources' outputs with the combination their z follows."""
    new = known_combination(n_sources=20, seed=11)
    values = [v for v, _ in load(result.best_checkpoint).score([Item(s.complex, s.output, s.references)
                                                                for s in new])]
    truth = [0.5 * len(s.output.split()) - 4 * len(s.output) / len(s.complex) for s in new]
    return float(np.corrcoef(values, truth)[0, 1])


def memo_weight(result: TrainResult) -> float:
    """The blend's standardised weight on the memo column, as a share of all its weights' magnitude."""
    weights = np.abs(json.loads((result.best_checkpoint / BLEND_FILE).read_text())["model"]["weights"])
    return float(weights[-1] / weights.sum())


def test_a_memorising_component_is_cross_fitted_and_the_blend_does_not_lean_on_it(
    memo: MemoKind, tmp_path: Path,
) -> None:
    samples = known_combination(n_sources=30, per_source=5)
    train, heldout = samples[:125], samples[125:]
    info, training = memo_version(memo, samples, tmp_path / "memo")

    off = blend_on(train, heldout, info, training, tmp_path / "off", crossfit="off")
    assert memo.trainings == [] and off.heldout["crossfit"] == {"mode": "off", "components": {}}
    assert any("learned:memo:7 trained on 30 of the blend's sources and crossfit=off" in w for w in off.warnings)
    # in sample the memo column is the target itself: cross-validation and the fit lean on it, new data do not
    assert off.heldout["cv_tau"] > 0.99 and memo_weight(off) > 0.9
    assert fidelity_on_new_sources(off) < 0.5

    events: list[ProgressEvent] = []

    class Record(Callback):
        def on_progress(self, event: ProgressEvent) -> None:
            events.append(event)

    auto = blend_on(train, heldout, info, training, tmp_path / "auto", callbacks=[Record()])
    record = auto.heldout["crossfit"]["components"]["learned:memo:7"]
    assert auto.heldout["crossfit"]["mode"] == "auto" and auto.warnings == []
    # three folds of the training sources, then the held-out sources: each trained without its sentences
    assert record["folds"] == 3 and record["trainings"] == 4 and record["heldout"] is True
    assert record["shared_sources"] == 30 and record["seconds"] >= 0
    assert sorted(memo.trainings) == sorted(125 + 25 - n for n in [*fold_sizes(train, 3, 1), 25])
    assert memo_weight(auto) < 0.1 and fidelity_on_new_sources(auto) > 0.95
    # one epoch event per training of the component, before the candidates' and the final one
    crossfit_events = [h for h in auto.history if "crossfit" in h]
    assert [h["part"] for h in crossfit_events] == ["fold 1/3", "fold 2/3", "fold 3/3", "held-out"]
    assert len([e for e in events if e.kind == "epoch"]) == len(auto.history)

    # the checkpoint's metadata says the same
    metadata: Any = read_metadata(auto.best_checkpoint)
    assert metadata["crossfit"]["components"]["learned:memo:7"]["folds"] == 3


def fold_sizes(samples: Sequence[Sample], folds: int, seed: int) -> list[int]:
    from metrics.blend.learners import grouped_folds

    return [len(rows) for _, rows in grouped_folds([s.source_id for s in samples], folds, seed)]


def test_a_component_trained_on_other_sources_is_read_as_it_is(memo: MemoKind, tmp_path: Path) -> None:
    samples = known_combination(n_sources=12, per_source=4)
    info, training = memo_version(memo, known_combination(n_sources=12, per_source=4, seed=5), tmp_path / "memo")
    result = blend_on(samples, (), info, training, tmp_path / "blend")
    assert memo.trainings == [] and result.heldout["crossfit"]["components"] == {} and result.warnings == []


def test_a_component_whose_training_is_unknown_is_read_with_a_warning(memo: MemoKind, tmp_path: Path) -> None:
    samples = known_combination(n_sources=12, per_source=4)
    info, _ = memo_version(memo, samples, tmp_path / "memo")
    config = BLEND.config({"suite": "none", "text": "length", "learner": "ridge", "folds": 3})
    result = BLEND.train(config, TrainingInputs(train=samples, learned=[("memo", info)]), out_dir=tmp_path / "b",
                         callbacks=())
    assert memo.trainings == [] and "learned:memo:7: what it trained on is unknown" in result.warnings[0]


def test_a_cancel_stops_cross_fitting_between_trainings(memo: MemoKind, tmp_path: Path) -> None:
    samples = known_combination(n_sources=12, per_source=4)
    info, training = memo_version(memo, samples, tmp_path / "memo")

    class CancelAfterFirstTraining(Callback):
        def __init__(self) -> None:
            self.epochs = 0

        def on_progress(self, event: ProgressEvent) -> None:
            self.epochs += event.kind == "epoch"

        def should_cancel(self) -> bool:
            return self.epochs >= 1

    with pytest.raises(TrainingCancelled) as caught:
        blend_on(samples, (), info, training, tmp_path / "blend", callbacks=[CancelAfterFirstTraining()])
    assert len(memo.trainings) == 1 and caught.value.best_checkpoint is None
    assert not (tmp_path / "blend" / BEST_DIR).exists()


def test_the_crossfit_option_is_bounded() -> None:
    with pytest.raises(ConfigError, match="crossfit") as caught:
        BlendConfig.from_options({"crossfit": "sometimes"})
    assert caught.value.key == "crossfit"
    assert BlendConfig.from_options({}).crossfit == "auto"
    assert BlendConfig.from_options({"crossfit": "off"}).crossfit == "off"


def test_a_blend_scores_empty_outputs_when_every_component_does(memo: MemoKind, tmp_path: Path) -> None:
    samples = known_combination(n_sources=12, per_source=4)
    info, training = memo_version(memo, samples, tmp_path / "memo")

    def version(result: TrainResult) -> VersionInfo:
        return VersionInfo(pk=1, encoder="none", encoder_identity={}, seed=0, k=1, hyperparameters={},
                           checkpoint_path=str(result.best_checkpoint), serving_precision="fp32",
                           suite_version=SUITE_VERSION)

    plain = BLEND.train(BLEND.config({"suite": "fkgl", "text": "length", "learned": False, "folds": 3}),
                        TrainingInputs(train=samples), out_dir=tmp_path / "plain", callbacks=())
    assert BLEND.scores_empty_outputs(version(plain))
    empty = Item(samples[0].complex, "", samples[0].references)
    assert np.isfinite(load(plain.best_checkpoint).score([empty])[0][0])

    stacked = blend_on(samples, (), info, training, tmp_path / "stacked")
    assert not memo.scores_empty_outputs(info) and not BLEND.scores_empty_outputs(version(stacked))
    assert not BLEND.scores_empty_outputs(replace_path(version(plain), tmp_path / "nowhere"))


def replace_path(info: VersionInfo, path: Path) -> VersionInfo:
    from dataclasses import replace

    return replace(info, checkpoint_path=str(path))


def test_out_of_fold_values_are_read_by_content_not_by_object(memo: MemoKind, tmp_path: Path) -> None:
    from dataclasses import replace

    from metrics.blend.crossfit import crossfit_components
    from metrics.blend.kind import blend_components, heldout_metrics
    from metrics.learned.training import EpochLoop

    samples = known_combination(n_sources=12, per_source=4)
    train, heldout = samples[:40], samples[40:]
    info, training = memo_version(memo, samples, tmp_path / "memo")
    config = BLEND.config({"suite": "none", "text": "length", "folds": 3, "seed": 1})
    assert isinstance(config, BlendConfig)
    inputs = TrainingInputs(train=train, heldout=heldout, learned=[("memo", info)],
                            learned_training={info.pk: training})
    components = blend_components(config, inputs.learned)
    crossfitted = crossfit_components(config, components, inputs, loop=EpochLoop([]), callbacks=(),
                                      evaluate=heldout_metrics)
    read = crossfitted.reader()
    column = components[-1]
    assert column.name == "learned:memo:7"
    values = read(column, [*train, *heldout])
    # a copy of a sample (another object), or a sample listed twice, reads the same out-of-fold value
    copies = [replace(s) for s in [*train, *heldout]]
    assert all(a is not b for a, b in zip(copies, [*train, *heldout], strict=True))
    assert read(column, copies) == values and read(column, [train[0], train[0]]) == [values[0]] * 2
    # out of fold: none of them is the memorised target
    assert not any(v == s.z for v, s in zip(values, [*train, *heldout], strict=True))
    # an output it did not cross-fit is a clear error, not a KeyError
    with pytest.raises(ValueError, match="learned:memo:7 has no out-of-fold value of 1 of these outputs"):
        read(column, [replace(train[0], output="something else")])


def test_a_source_on_both_sides_of_the_blends_split_is_refused(memo: MemoKind, tmp_path: Path) -> None:
    samples = known_combination(n_sources=12, per_source=4)
    info, training = memo_version(memo, samples, tmp_path / "memo")
    with pytest.raises(ValueError, match=r"1 source\(s\) have outputs both in the blend's training and held-out"):
        blend_on(samples[:42], samples[42:], info, training, tmp_path / "blend")


def test_the_preview_names_what_cross_fitting_will_train_and_its_bound(memo: MemoKind, tmp_path: Path) -> None:
    from metrics.blend.crossfit import crossfit_bound

    samples = known_combination(n_sources=12, per_source=4)
    info, training = memo_version(memo, samples, tmp_path / "memo")
    keys = {sentence_key(s.complex) for s in samples}
    inputs = TrainingInputs(learned=[("memo", info)], learned_training={info.pk: training})

    def preview(options: dict[str, Any], source_keys: set[str] = keys) -> list[str]:
        config = BLEND.config({"suite": "none", "text": "length", "folds": 3, **options})
        return BLEND.training_preview(config, inputs, source_keys=source_keys, seconds={info.pk: 40.0})

    auto = BLEND.config({"folds": 3})
    assert isinstance(auto, BlendConfig) and crossfit_bound(auto, 12) == 4 and crossfit_bound(auto, 2) == 3
    assert preview({}) == ["learned:memo:7 trained on 12 of these sources, so it is cross-fitted: it is trained "
                           "again up to 4 times before the blend is fitted (its own training took 40 s: up to "
                           "about 160 s in all); crossfit=\"off\" skips this and reads its in-sample scores"]
    assert preview({"heldout_fraction": 0})[0].count("up to 3 times") == 1
    assert "crossfit=off reads its in-sample scores" in preview({"crossfit": "off"})[0]
    assert preview({}, {"another sentence"}) == [] and preview({"learned": False}) == []
    # what the preview bounds is what the run takes
    result = blend_on(samples[:40], samples[40:], info, training, tmp_path / "blend", folds=3)
    assert result.heldout["crossfit"]["components"]["learned:memo:7"]["trainings"] <= crossfit_bound(auto, 12)


def test_sources_systems_cross_validation_says_cross_fitting_holds_out_sources_only(
    memo: MemoKind, tmp_path: Path,
) -> None:
    samples = known_combination(n_sources=12, per_source=5)
    info, training = memo_version(memo, samples, tmp_path / "memo")
    result = blend_on(samples, (), info, training, tmp_path / "blend", cv="sources-systems")
    assert result.heldout["cv"] == "sources-systems"
    assert [w for w in result.warnings if "cross-fitted by source folds only" in w] == [
        "learned:memo:7 is cross-fitted by source folds only: its values of a held-out system's outputs come from "
        "a model that trained on that system's outputs of other sources, so the sources-systems cross-validation "
        "is optimistic about it on new systems"]
    assert not any("source folds only" in w for w in blend_on(samples, (), info, training, tmp_path / "b2").warnings)


def test_a_cancel_stops_cross_fitting_inside_a_components_training(memo: MemoKind, tmp_path: Path) -> None:
    from metrics.learned.training import EpochLoop

    samples = known_combination(n_sources=12, per_source=4)
    info, training = memo_version(memo, samples, tmp_path / "memo")
    nested: list[list[str]] = []
    train = MemoKind.train

    def train_in_a_loop(self: MemoKind, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
                        callbacks: Sequence[Callback]) -> TrainResult:
        # as a kind's own loop does: it checks its callbacks for a cancel before it trains
        nested.append([type(c).__name__ for c in callbacks])
        loop = EpochLoop(list(callbacks))
        loop.start_epoch()
        loop.check_cancel()
        return train(self, config, inputs, out_dir=out_dir, callbacks=callbacks)

    class CancelOnFourthAsk(Callback):
        def __init__(self) -> None:
            self.asked = 0
            self.events: list[ProgressEvent] = []

        def on_progress(self, event: ProgressEvent) -> None:
            self.events.append(event)

        def should_cancel(self) -> bool:
            self.asked += 1
            # asked by the blend before each training and by the kind's loop inside it: the 4th is inside the 2nd
            return self.asked >= 4

    cancel = CancelOnFourthAsk()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MemoKind, "train", train_in_a_loop)
        with pytest.raises(TrainingCancelled) as caught:
            blend_on(samples, (), info, training, tmp_path / "blend", callbacks=[cancel])
    # the second training was stopped inside (the kind got only CancelOf, never the parent's progress hooks);
    # the cancel is the parent run's, at its epoch, with no checkpoint
    assert nested == [["CancelOf"], ["CancelOf"]] and len(memo.trainings) == 1 and cancel.asked == 4
    assert caught.value.epoch == 2 and caught.value.best_checkpoint is None
    assert not (tmp_path / "blend" / BEST_DIR).exists() and [e.epoch for e in cancel.events] == [1]
