"""REFEREE's pure core on the tiny encoder: the forward pass, the masked multi-head loss, the synthetic data
and the three stages."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from metrics.learned import load_encoder
from metrics.learned.callbacks import ProgressCallback, ProgressEvent
from metrics.learned.config import ConfigError
from metrics.referee import (
    HUMAN_SIGNAL,
    RefereeConfig,
    RefereeModel,
    RefereeScorer,
    masked_multihead_loss,
    train,
)
from metrics.referee.config import REFERENCE_BASED_SIGNALS, REFERENCE_FREE_SIGNALS
from metrics.referee.data import (
    compute_signals,
    degrade,
    pretraining_signals,
    rated_outputs_corpus,
    signal_key,
    synthetic_corpus,
    synthetic_outputs,
    system_outputs,
)
from metrics.referee.training import RefereeTrainer
from tests.tiny import REFEREE_CORPUS, lens_samples


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_forward_gives_one_prediction_per_signal_and_pair(tiny_encoder_dir: Path) -> None:
    encoder = load_encoder(str(tiny_encoder_dir), max_length=24)
    model = RefereeModel(encoder, ["fkgl", "sari", HUMAN_SIGNAL])
    out = model([("the cat sat on the mat", "the cat sat"), ("a big dog ran", "a dog ran fast")])
    assert out.shape == (2, 3)
    assert torch.isfinite(out).all()
    # the pair is read as one text: swapping complex and output changes the prediction
    swapped = model([("the cat sat", "the cat sat on the mat")])
    assert not torch.allclose(out[0], swapped[0])


def test_masked_loss_ignores_missing_signals_and_weighs_signals_equally() -> None:
    predictions = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]], requires_grad=True)
    targets = torch.tensor([[0.0, float("nan")], [0.0, float("nan")], [float("nan"), 0.0]])
    mask = ~torch.isnan(targets)
    loss = masked_multihead_loss(predictions, targets, mask)
    # signal 0: (1 + 9) / 2 = 5 over its two present cells; signal 1: 4 over its one; mean of the two = 4.5
    assert float(loss.detach()) == pytest.approx(4.5)
    loss.backward()
    assert predictions.grad is not None
    # the masked cells get no gradient, whatever the prediction there
    assert predictions.grad[0, 1] == 0 and predictions.grad[2, 0] == 0
    assert predictions.grad[0, 0] != 0
    nothing = masked_multihead_loss(predictions, targets, torch.zeros_like(mask))
    assert float(nothing.detach()) == 0.0


def test_synthetic_outputs_are_references_plus_forty_percent_degraded() -> None:
    rows = [(f"s{i}", "the old man saw the big red car in the city today",
             [f"the man saw car number {i} {j} in the city" for j in range(10)]) for i in range(6)]
    examples = synthetic_outputs(rows, degraded_fraction=0.4, seed=1)
    degraded = [e for e in examples if e.degraded]
    assert len(degraded) == 6 * 7  # 7 of 17 per source: 41%, every draw applies to these outputs
    assert {e.degradation for e in degraded} == {"delete", "scramble", "swap"}
    assert all(e.degradation is None for e in examples if not e.degraded)
    for e in examples:
        assert e.output not in e.others  # reference-based signals use the other references only
        assert len(e.others) == 9
    # one-word references: only a swap can degrade them, and redrawing still reaches the fraction
    short = synthetic_outputs([("w", "The committee postponed the vote.", [f"Delayed{j}." for j in range(6)])],
                              degraded_fraction=0.4, seed=3)
    assert sum(e.degraded for e in short) == 4
    assert all(e.output == "The committee postponed the vote." for e in short if e.degraded)


def test_system_outputs_are_each_distinct_output_against_the_other_references_plus_degraded_copies() -> None:
    refs = ["The man saw a red car.", "A man saw the car.", "He saw a red car in town."]
    outputs = ["The old man saw the big red car.", "The old man saw the big red car.",  # two systems agree
               "A man saw the car.",  # a system that copies a reference
               "The man who was old saw a big car in the city."]
    rows = [("s1", "The old man, who was tired, saw the big red car in the city.", refs, outputs)]
    examples = system_outputs(rows, degraded_fraction=0.4, seed=3)
    plain = [e for e in examples if not e.degraded]
    assert [e.output for e in plain] == list(dict.fromkeys(outputs))  # each distinct output once
    assert all(e.output not in e.others for e in examples if not e.degraded)
    assert [len(e.others) for e in plain] == [3, 2, 3]  # the copied reference is not its own reference
    degraded = [e for e in examples if e.degraded]
    assert len(degraded) == 2  # round(3 * 0.4 / 0.6)
    assert {e.others for e in degraded} <= {p.others for p in plain}  # a copy keeps its output's references
    assert all(e.output not in {p.output for p in plain} for e in degraded if e.complex == rows[0][1])


def test_stage_two_reads_the_training_outputs_not_their_ratings_whatever_their_order() -> None:
    samples = lens_samples(4, 4, seed=3)
    both = RefereeConfig(stage2_data="both", seed=1)
    examples = rated_outputs_corpus(samples, both)
    distinct = {(s.source_id, s.output) for s in samples}
    assert sorted((e.source_id, e.output) for e in examples if not e.degraded) == sorted(distinct)
    assert sum(e.degraded for e in examples) == sum(round(n * 0.4 / 0.6) for n in (
        len({s.output for s in samples if s.source_id == sid}) for sid in sorted({s.source_id for s in samples})))
    rerated = [s.__class__(**{**s.__dict__, "z": -s.z, "ratings": {}}) for s in reversed(samples)]
    assert rated_outputs_corpus(rerated, both) == examples  # neither the ratings nor the order count
    assert rated_outputs_corpus(samples, RefereeConfig()) == []  # the default stage 2 reads the corpus only
    assert rated_outputs_corpus(samples, RefereeConfig(stage2_data="outputs", stages=(1, 3))) == []  # no stage 2
    assert synthetic_corpus(REFEREE_CORPUS, RefereeConfig(stage2_data="outputs", stages=(2, 3))) == []


def test_what_stage_two_reads_decides_whether_the_corpus_is_read() -> None:
    assert RefereeConfig().reads_corpus and not RefereeConfig().reads_outputs
    outputs_only = RefereeConfig(stage2_data="outputs", stages=(2, 3), max_sources=50)
    assert not outputs_only.reads_corpus and outputs_only.reads_outputs and outputs_only.corpus_rows_used is None
    mixed = RefereeConfig(stage2_data="outputs", max_sources=50)  # stage 1 still reads the corpus
    assert mixed.reads_corpus and mixed.reads_outputs and mixed.corpus_rows_used == 50
    # the reference-based signals are computed for the data stage 2 reads, and only for it
    assert pretraining_signals(mixed, "corpus") == list(REFERENCE_FREE_SIGNALS)
    assert pretraining_signals(mixed, "outputs") == [*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS]
    assert pretraining_signals(RefereeConfig(), "outputs") == [] and pretraining_signals(outputs_only, "corpus") == []
    both = RefereeConfig(stage2_data="both")
    assert pretraining_signals(both, "corpus") == pretraining_signals(both, "outputs") == pretraining_signals(
        RefereeConfig()) == [*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS]
    with pytest.raises(ConfigError, match="stage2_data must be one of corpus, outputs, both"):
        RefereeConfig(stage2_data="system")
    with pytest.raises(ConfigError, match="stage2_epochs"):
        RefereeConfig(stage2_epochs=0)


def test_stage_two_on_the_rated_outputs_alone_needs_no_corpus(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    samples = lens_samples(6, 4, seed=4)
    config = RefereeConfig(encoder=str(tiny_encoder_dir), max_length=24, batch_size=4, finetune_epochs=1,
                           stages=(2, 3), stage2_data="outputs", stage2_epochs=2, device="cpu", seed=2)
    result = train(config, [], samples[:16], samples[16:], out_dir=tmp_path)
    assert [h["stage"] for h in result.history] == ["stage2", "stage2", "stage3"]
    assert result.heldout["synthetic_outputs"] == 0
    training = rated_outputs_corpus(samples[:16], config)
    assert result.heldout["rated_outputs"] == len(training) > len({(s.source_id, s.output) for s in samples[:16]})
    assert result.heldout["rated_outputs_degraded"] == sum(e.degraded for e in training) > 0
    assert result.heldout["masked_signals"] == ["pomme"] or result.heldout["masked_signals"] == []
    with pytest.raises(ValueError, match="need a corpus"):
        train(RefereeConfig(encoder=str(tiny_encoder_dir), device="cpu", stage2_data="outputs"), [], samples, [],
              out_dir=tmp_path)


def test_degradations_are_the_papers_deletion_scramble_and_swap() -> None:
    source, output = "The old man, who was tired, saw the big red car.", "The old man saw a big red car today."
    made: dict[str, list[tuple[str, str]]] = {}
    rng = random.Random(7)
    for _ in range(400):
        result = degrade(source, output, rng)
        assert result is not None  # an eight-word output takes every degradation
        made.setdefault(result[2], []).append(result[:2])
    assert {how: round(len(v) / 400, 1) for how, v in made.items()} == {"delete": 0.3, "scramble": 0.3, "swap": 0.4}
    assert set(made["swap"]) == {(output, source)}  # the complex and simplified sentences change places
    words = output.split()
    for complex_text, text in made["delete"]:
        assert complex_text == source and 1 <= len(words) - len(text.split()) <= 4
    for complex_text, text in made["scramble"]:
        assert complex_text == source and text != output
        moved = sum(a != b for a, b in zip(text.rstrip(".").split(), output.rstrip(".").split(), strict=True))
        assert sorted(text.rstrip(".").split()) == sorted(output.rstrip(".").split()) and 2 <= moved <= 5
    assert degrade(source, "Tired.", random.Random(0)) in (None, ("Tired.", source, "swap"))


def test_signals_computed_earlier_are_taken_and_the_others_computed() -> None:
    examples = synthetic_outputs(REFEREE_CORPUS, degraded_fraction=0.4, seed=1)
    text = compute_signals(examples, signals=["fkgl", "compression", "sari"], embed_cosine=None)
    assert all(e.signals["sari"] is not None for e in text if e.others)
    # marked values: a signal taken from ``known`` keeps them, one computed again would not
    known = {signal_key(e): {**e.signals, "fkgl": 100.0 + i} for i, e in enumerate(text)}
    asked: list[int] = []

    def cosine(pairs: Sequence[tuple[str, str]]) -> list[float]:
        asked.append(len(pairs))
        return [0.5] * len(pairs)

    done = compute_signals(examples, signals=["fkgl", "cosine", "compression", "sari"], embed_cosine=cosine,
                           known=known)
    assert [e.signals["fkgl"] for e in done] == [100.0 + i for i in range(len(examples))]
    assert [e.signals["sari"] for e in done] == [e.signals["sari"] for e in text]
    assert asked == [len(examples)] and {e.signals["cosine"] for e in done} == {0.5}
    # one output missing from what was computed earlier: its signals are computed for every output
    partly = dict(list(known.items())[1:])
    again = compute_signals(examples, signals=["fkgl"], embed_cosine=None, known=partly)
    assert [e.signals["fkgl"] for e in again] == [e.signals["fkgl"] for e in text]
    with pytest.raises(ValueError, match="cosine signal needs the encoder"):
        compute_signals(examples, signals=["cosine"], embed_cosine=None)
    with pytest.raises(ValueError, match="unknown REFEREE signals"):
        compute_signals(examples, signals=["human"], embed_cosine=None)


def test_pretraining_with_every_signal_known_computes_no_suite_metric(
    tiny_encoder_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU-machine path of experiments/referee_seeds.py: the signals come computed, only torch is needed."""
    config = RefereeConfig(encoder=str(tiny_encoder_dir), max_length=24, batch_size=4, finetune_epochs=1,
                           stages=(1, 2, 3), device="cpu", seed=2)
    examples = synthetic_outputs(REFEREE_CORPUS, degraded_fraction=config.degraded_fraction, seed=config.seed)
    names = [*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS]
    known = {signal_key(e): {name: float(i + j) for j, name in enumerate(names)} for i, e in enumerate(examples)}

    def no_suite(name: str, *args: object, **kwargs: object) -> None:
        raise AssertionError(f"{name} was computed again")

    monkeypatch.setattr("metrics.referee.data._suite_values", no_suite)
    samples = lens_samples(4, 4, seed=3)
    result = train(config, REFEREE_CORPUS, samples[:12], samples[12:], out_dir=tmp_path, known_signals=known)
    assert result.heldout["masked_signals"] == [] and result.heldout["synthetic_outputs"] == len(examples)


def test_config_rejects_stage_sets_without_fine_tuning() -> None:
    with pytest.raises(ConfigError, match="stages"):
        RefereeConfig(stages=(1, 2))
    with pytest.raises(ConfigError, match="unknown RefereeConfig key"):
        RefereeConfig.from_dict({"epochs": 3})
    assert RefereeConfig.from_dict(RefereeConfig(stages=(3, 1)).to_dict()).stages == (1, 3)


def test_pretraining_stages_take_their_own_encoder_learning_rate(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    config = RefereeConfig(encoder=str(tiny_encoder_dir), max_length=24, encoder_lr=5e-5,
                           pretrain_encoder_lr=1e-5, head_lr=1e-3, device="cpu")
    trainer = RefereeTrainer(config, out_dir=tmp_path)
    model = RefereeModel(load_encoder(config.encoder, max_length=24), ["human"])
    rates = {stage: [g["lr"] for g in trainer._optimizer(model, stage).param_groups]
             for stage in ("stage1", "stage2", "stage3")}
    assert rates == {"stage1": [1e-3, 1e-5], "stage2": [1e-3, 1e-5], "stage3": [1e-3, 5e-5]}
    same = RefereeTrainer(RefereeConfig(encoder_lr=5e-5, pretrain_encoder_lr=None), out_dir=tmp_path)
    assert same.encoder_lr("stage1") == same.encoder_lr("stage3") == 5e-5
    with pytest.raises(ConfigError, match="pretrain_encoder_lr"):
        RefereeConfig(pretrain_encoder_lr=0.0)


def test_three_stages_train_save_and_serve(tiny_encoder_dir: Path, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    samples = lens_samples(8, 4, seed=3)
    config = RefereeConfig(encoder=str(tiny_encoder_dir), max_length=24, batch_size=4, finetune_epochs=2,
                           encoder_lr=1e-3, head_lr=3e-3, device="cpu", seed=5)
    events: list[ProgressEvent] = []
    result = train(config, REFEREE_CORPUS, samples[:24], samples[24:], out_dir=tmp_path,
                   callbacks=[ProgressCallback(events.append)])
    stages = result.heldout["stage_seconds"]
    assert {"signals", "stage1", "stage2", "stage3"} <= set(stages)
    assert [h["stage"] for h in result.history] == ["stage1", "stage2", "stage3", "stage3"]
    assert result.heldout["tau"].get("all") is not None
    made = result.heldout["degradations"]  # the version records how its synthetic outputs were degraded
    assert set(made) <= {"delete", "scramble", "swap"} and sum(made.values()) == round(
        result.heldout["degraded_share"] * result.heldout["synthetic_outputs"]) > 0
    epoch_events = [e for e in events if e.kind == "epoch"]
    assert len(epoch_events) == 4 and epoch_events[0].heldout is None and epoch_events[-1].heldout is not None
    asked: list[object] = []  # no device: the family's rule (CUDA when available), as training and LENS take it

    def spy(device: object) -> torch.device:
        asked.append(device)
        return torch.device("cpu")

    monkeypatch.setattr("metrics.referee.scorer.resolve_device", spy)
    scorer = RefereeScorer.load(result.best_checkpoint)
    assert asked == [None]
    values = scorer.predict([(s.complex, s.output) for s in samples[24:]])
    assert len(values) == 8 and all(math.isfinite(v) for v in values)
    assert scorer.metadata["signal_stats"]["compression"][1] > 0  # type: ignore[index,operator,call-overload]


def test_fine_tuning_only_needs_no_corpus(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    samples = lens_samples(6, 4, seed=4)
    config = RefereeConfig(encoder=str(tiny_encoder_dir), max_length=24, batch_size=4, finetune_epochs=1,
                           stages=(3,), device="cpu")
    result = train(config, [], samples[:16], samples[16:], out_dir=tmp_path)
    assert [h["stage"] for h in result.history] == ["stage3"]
    with pytest.raises(ValueError, match="need a corpus"):
        train(RefereeConfig(encoder=str(tiny_encoder_dir), device="cpu"), [], samples, [], out_dir=tmp_path)


def test_without_heldout_fine_tuning_keeps_its_last_epoch(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    # heldout_fraction=0 leaves nothing to select on: the last epoch is the model (it used to be the first)
    samples = lens_samples(6, 4, seed=4)
    config = RefereeConfig(encoder=str(tiny_encoder_dir), max_length=24, batch_size=4, finetune_epochs=3,
                           stages=(3,), device="cpu", heldout_fraction=0.0)
    result = train(config, [], samples, [], out_dir=tmp_path)
    assert result.best_epoch == 3
    last = RefereeScorer.load(result.best_checkpoint).predict([(s.complex, s.output) for s in samples[:4]])
    first = train(RefereeConfig.from_dict({**config.to_dict(), "finetune_epochs": 1}), [], samples, [],
                  out_dir=tmp_path / "one")
    assert RefereeScorer.load(first.best_checkpoint).predict([(s.complex, s.output) for s in samples[:4]]) != last


def test_the_ranking_term_fine_tunes_on_single_source_batches_and_adds_to_the_loss(
    tiny_encoder_dir: Path, tmp_path: Path,
) -> None:
    samples = lens_samples(6, 6, seed=4)
    data: list[tuple[tuple[str, str], dict[str, float | None]]] = [
        ((s.complex, s.output), {HUMAN_SIGNAL: s.z}) for s in samples
    ]
    source_of = {s.complex: s.source_id for s in samples}
    plain = RefereeConfig(encoder=str(tiny_encoder_dir), max_length=24, batch_size=4, stages=(3,), device="cpu")
    ranked = RefereeConfig.from_dict({**plain.to_dict(), "rank_weight": 2.0})
    mixed = RefereeTrainer(plain, out_dir=tmp_path)._batches(data, [HUMAN_SIGNAL], random.Random(0))
    assert any(len({source_of[c] for (c, _), _ in batch}) > 1 for batch in mixed)
    for signals in (["fkgl"], [*REFERENCE_FREE_SIGNALS]):  # pre-training batches stay mixed
        assert RefereeTrainer(ranked, out_dir=tmp_path)._batches(data, signals, random.Random(0)) == mixed
    single = RefereeTrainer(ranked, out_dir=tmp_path)._batches(data, [HUMAN_SIGNAL], random.Random(0))
    assert all(len({source_of[c] for (c, _), _ in batch}) == 1 for batch in single)
    assert sorted(item[0] for batch in single for item in batch) == sorted(pair for pair, _ in data)

    def first_step_loss(config: RefereeConfig) -> float:
        torch.manual_seed(0)
        trainer = RefereeTrainer(config, out_dir=tmp_path)
        model = RefereeModel(load_encoder(config.encoder, max_length=24), [HUMAN_SIGNAL])
        return trainer._run_epoch(model, trainer._optimizer(model, "stage3"), data[:4], [HUMAN_SIGNAL],
                                  random.Random(0))

    # data[:4]: one source, two good and two bad outputs; the same seed gives the same first predictions, so
    # the squared error is equal and the ranking term adds rank_weight times one positive amount
    base, added = first_step_loss(plain), first_step_loss(ranked) - first_step_loss(plain)
    doubled = first_step_loss(RefereeConfig.from_dict({**plain.to_dict(), "rank_weight": 4.0})) - base
    assert added > 0.1 and doubled == pytest.approx(2 * added, rel=1e-4)
    with pytest.raises(ConfigError, match="rank_weight"):
        RefereeConfig(rank_weight=-1.0)


def test_predictions_are_in_input_order_whatever_the_length_batches(tiny_encoder_dir: Path) -> None:
    torch.manual_seed(0)
    model = RefereeModel(load_encoder(str(tiny_encoder_dir), max_length=24), ["fkgl", HUMAN_SIGNAL]).eval()
    scorer = RefereeScorer(model, {}, torch.device("cpu"))
    pairs = [("a dog ran", "the big dog ran fast"), ("the old man saw the big red car in the street", "he saw a car"),
             ("one", "two"), ("the cat sat on the mat today", "the cat sat")]
    batched = scorer.predict(pairs, batch_size=2)
    alone = [scorer.predict([pair], batch_size=1)[0] for pair in pairs]
    assert batched == pytest.approx(alone, abs=1e-5)
    assert len(set(batched)) == 4
