"""LENS package: loss, inference, training callbacks, checkpoints and reproducibility on a tiny encoder."""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from metrics.learned.callbacks import ProgressEvent, TrainingCancelled, TrainResult
from metrics.lens import (
    InputTooLongError,
    LensConfig,
    LensScorer,
    Prediction,
    max_over_references,
    topk_loss,
    train,
    z_to_score,
)
from metrics.lens.checkpoint import load_checkpoint, save_checkpoint
from metrics.lens.encoders import HFEncoder
from metrics.lens.model import LensModel
from tests.tiny import lens_samples as make_samples
from tests.tiny import tiny_train_config


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


# --- loss and inference ------------------------------------------------------------------------------


def test_topk_loss_matches_hand_computation_with_clamping_and_masks() -> None:
    predictions = torch.tensor([[1.0, 3.0, 2.0, 0.0], [0.5, 9.0, 7.0, 8.0]], requires_grad=True)
    target = torch.tensor([1.0, 1.5])
    mask = torch.tensor([[True, True, True, True], [True, False, False, False]])
    # k=2: sample 0 keeps 3 and 2 -> (2² + 1²) / 2 = 2.5; sample 1 has one real reference (0.5), its
    # masked 9, 7, 8 must be ignored, k clamps to 1 -> (0.5 - 1.5)² = 1. Mean over samples: 1.75.
    loss = topk_loss(predictions, target, mask, k=2)
    assert loss.item() == pytest.approx(1.75)
    loss.backward()
    assert predictions.grad is not None and torch.isfinite(predictions.grad).all()
    assert predictions.grad[1, 1:].abs().sum().item() == 0.0  # padding gets no gradient
    assert predictions.grad[0, 0].item() == 0.0 and predictions.grad[0, 3].item() == 0.0  # not in the top 2
    # k larger than the number of slots: sample 0 uses all four -> (0 + 4 + 1 + 1) / 4 = 1.5.
    assert topk_loss(predictions, target, mask, k=5).item() == pytest.approx((1.5 + 1.0) / 2)
    # k=1 is the MSE of the maximum.
    assert topk_loss(predictions, target, mask, k=1).item() == pytest.approx(((3 - 1) ** 2 + 1.0) / 2)


def test_topk_loss_rejects_samples_without_references() -> None:
    with pytest.raises(ValueError, match="reference"):
        topk_loss(torch.zeros(1, 2), torch.zeros(1), torch.zeros(1, 2, dtype=torch.bool), k=1)


def test_pairwise_rank_loss_matches_hand_computation_and_skips_ties() -> None:
    from metrics.lens.loss import pairwise_rank_loss

    scores = torch.tensor([1.0, 0.0, 0.5], requires_grad=True)
    target = torch.tensor([2.0, 1.0, 1.0])
    # pairs with target_i > target_j: (0, 1) margin 1 and (0, 2) margin 0.5; (1, 2) is a tie, not a pair
    expected = (math.log1p(math.exp(-1.0)) + math.log1p(math.exp(-0.5))) / 2
    loss = pairwise_rank_loss(scores, target)
    assert loss.item() == pytest.approx(expected)
    loss.backward()
    assert scores.grad is not None and scores.grad[0].item() < 0 < scores.grad[1].item()  # pushes 0 up, 1 down
    tied = torch.zeros(3, requires_grad=True)
    flat = pairwise_rank_loss(tied, torch.ones(3))
    flat.backward()
    assert flat.item() == 0.0 and tied.grad is not None and tied.grad.abs().sum().item() == 0.0


def test_rank_weight_adds_the_ranking_term_to_the_papers_loss(
    tiny_encoder_dir: Path, tmp_path: Path
) -> None:
    from metrics.learned.callbacks import ProgressCallback
    from metrics.learned.config import ConfigError
    from metrics.lens import TrainConfig

    samples = make_samples(4, 4, seed=2)

    def first_step_loss(name: str, **overrides: object) -> float:
        steps: list[float] = []
        callback = ProgressCallback(lambda e: steps.append(e.loss) if e.kind == "step" else None)
        train(tiny_train_config(tiny_encoder_dir, epochs=1, **overrides), samples, [], out_dir=tmp_path / name,
              callbacks=[callback])
        return steps[0]

    paper = first_step_loss("paper", rank_weight=0.0)
    assert first_step_loss("ranked", rank_weight=2.0) > paper  # the same predictions plus a positive term
    assert first_step_loss("default", rank_weight=TrainConfig().rank_weight) > paper  # the default ranks too
    with pytest.raises(ConfigError, match="rank_weight"):
        TrainConfig.from_options({"rank_weight": -1})


def test_max_over_references_ignores_padding_and_score_is_normal_cdf() -> None:
    predictions = torch.tensor([[0.1, 0.7, -0.2], [-1.0, 5.0, 5.0]])
    mask = torch.tensor([[True, True, True], [True, False, False]])
    assert max_over_references(predictions, mask).tolist() == pytest.approx([0.7, -1.0])
    assert z_to_score(0.0) == pytest.approx(50.0)
    assert z_to_score(1.0) == pytest.approx(84.1344746)
    assert z_to_score(-1.96) == pytest.approx(2.4997895)
    prediction = Prediction.from_per_reference([0.1, 0.7, -0.2])
    assert prediction.z == pytest.approx(0.7)
    assert prediction.score == pytest.approx(100 * 0.5 * (1 + math.erf(0.7 / math.sqrt(2))))
    assert prediction.per_reference == pytest.approx([0.1, 0.7, -0.2])


# --- training -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(
    tiny_encoder_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[TrainResult, list[ProgressEvent]]:
    events: list[ProgressEvent] = []
    config = tiny_train_config(tiny_encoder_dir, epochs=4)
    result = train(
        config,
        make_samples(8, 6, seed=0),
        make_samples(3, 6, seed=1),
        out_dir=tmp_path_factory.mktemp("run"),
        on_progress=events.append,
    )
    return result, events


def test_training_lowers_the_loss_and_reports_progress(
    trained: tuple[TrainResult, list[ProgressEvent]],
) -> None:
    result, events = trained
    losses = [entry["train_loss"] for entry in result.history]
    assert len(losses) == 4
    assert losses[-1] < 0.7 * losses[0]
    assert losses[1] < losses[0]  # the first unfrozen epoch already helps
    steps = [e for e in events if e.kind == "step"]
    epochs = [e for e in events if e.kind == "epoch"]
    assert [e.epoch for e in epochs] == [1, 2, 3, 4]
    assert steps[-1].step == steps[-1].total_steps == 4 * 16  # 8 sources x (4 + 2) outputs per step, 4 epochs
    for event in epochs:
        assert event.heldout is not None
        assert {"all", "paraphrase", "unknown"} <= set(event.heldout.tau)
        assert event.heldout.loss is not None and event.heldout.pearson is not None
    assert result.device == "cpu"
    assert result.train_seconds > 0
    assert 1 <= result.best_epoch <= 4
    assert result.history[result.best_epoch - 1]["best"]
    assert (result.best_checkpoint / "model.safetensors").is_file()
    assert (result.best_checkpoint / "learned_config.json").is_file()


def test_checkpoint_selection_uses_the_best_heldout_tau(
    trained: tuple[TrainResult, list[ProgressEvent]],
) -> None:
    result, _ = trained
    taus = [entry["heldout"]["tau"]["all"] for entry in result.history]
    assert result.heldout["tau"]["all"] == max(taus)
    assert taus.index(max(taus)) + 1 == result.best_epoch  # first epoch reaching the best value


def test_trained_checkpoint_scores_good_outputs_above_bad_ones(
    trained: tuple[TrainResult, list[ProgressEvent]],
) -> None:
    scorer = LensScorer.load(trained[0].best_checkpoint, device="cpu")
    samples = make_samples(4, 6, seed=3)
    predictions = scorer.predict([(s.complex, s.output, s.references) for s in samples])
    good = [p.z for s, p in zip(samples, predictions, strict=True) if s.z > 0]
    bad = [p.z for s, p in zip(samples, predictions, strict=True) if s.z < 0]
    assert sum(good) / len(good) > sum(bad) / len(bad)
    for sample, prediction in zip(samples, predictions, strict=True):
        assert len(prediction.per_reference) == len(sample.references)
        assert prediction.z == max(prediction.per_reference)
        assert 0.0 <= prediction.score <= 100.0


def test_cancellation_raises_and_keeps_the_best_checkpoint_so_far(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    calls = {"n": 0}

    def should_stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 20  # epoch 1 has 12 steps and an evaluation: stop during epoch 2

    with pytest.raises(TrainingCancelled) as info:
        train(
            tiny_train_config(tiny_encoder_dir, epochs=5),
            make_samples(8, 6, seed=0),
            make_samples(2, 6, seed=1),
            out_dir=tmp_path,
            should_stop=should_stop,
        )
    assert info.value.epoch == 2
    assert info.value.best_checkpoint == tmp_path / "best"
    assert (tmp_path / "best" / "model.safetensors").is_file()
    assert not (tmp_path / "best.partial").exists()


def test_same_seed_reproduces_training_and_other_seed_differs(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    data, held = make_samples(4, 6, seed=0), make_samples(2, 6, seed=1)
    inputs = [(s.complex, s.output, s.references) for s in held]

    def run(seed: int, name: str) -> tuple[list[float], list[float]]:
        config = tiny_train_config(tiny_encoder_dir, epochs=2, seed=seed)
        result = train(config, data, held, out_dir=tmp_path / name)
        scores = [p.z for p in LensScorer.load(result.best_checkpoint, device="cpu").predict(inputs)]
        return [entry["train_loss"] for entry in result.history], scores

    first, second, other = run(3, "a"), run(3, "b"), run(4, "c")
    assert first == second
    assert first[0] != other[0]


# --- checkpoints and serving --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_model(tiny_encoder_dir: Path) -> LensModel:
    torch.manual_seed(0)
    config = LensConfig(encoder=str(tiny_encoder_dir), hidden_sizes=(16,), max_length=24)
    return LensModel(config, HFEncoder.from_pretrained(config.encoder, max_length=config.max_length)).eval()


def test_save_load_round_trip_gives_identical_predictions(tiny_model: LensModel, tmp_path: Path) -> None:
    samples = make_samples(3, 4, seed=5)
    inputs = [(s.complex, s.output, s.references) for s in samples]
    before = LensScorer(tiny_model, device=torch.device("cpu")).predict(inputs, batch_size=3)
    directory = save_checkpoint(tiny_model, tmp_path / "ckpt", extra={"note": "test"})
    assert {p.name for p in (directory / "encoder").iterdir()} >= {"config.json", "tokenizer.json"}
    loaded, metadata = load_checkpoint(directory)
    assert metadata["note"] == "test" and metadata["kind"] == "lens"
    assert metadata["config"]["model"]["hidden_sizes"] == [16]  # type: ignore[index,call-overload]
    after = LensScorer(loaded, device=torch.device("cpu")).predict(inputs, batch_size=3)
    assert [p.per_reference for p in after] == [p.per_reference for p in before]
    assert [p.score for p in after] == [p.score for p in before]


def test_predictions_do_not_depend_on_batching_or_order(tiny_model: LensModel) -> None:
    scorer = LensScorer(tiny_model, device=torch.device("cpu"))
    inputs = [(s.complex, s.output, s.references) for s in make_samples(3, 4, seed=6)]
    whole = scorer.predict(inputs, batch_size=64)
    alone = [scorer.predict([triple], batch_size=1)[0] for triple in inputs]
    for a, b in zip(whole, alone, strict=True):
        assert a.per_reference == pytest.approx(b.per_reference, abs=1e-5)


def test_predict_validates_inputs_and_flags_truncation(tiny_model: LensModel) -> None:
    scorer = LensScorer(tiny_model, device=torch.device("cpu"))
    with pytest.raises(ValueError, match="at least one reference"):
        scorer.predict([("the cat", "a cat", [])])
    with pytest.raises(ValueError, match="empty output"):
        scorer.predict([("the cat", "  ", ["a cat"])])
    with pytest.raises(ValueError, match="sequence of strings"):
        scorer.predict([("the cat", "a cat", "a dog")])
    long_text = " ".join(["the big red house"] * 10)  # 40 words > 24 tokens
    with pytest.raises(InputTooLongError):
        scorer.predict([(long_text, "a cat", ["a dog"])], truncate=False)
    short, cut = scorer.predict([("the cat", "a cat", ["a dog"]), (long_text, "a cat", ["a dog"])])
    assert not short.truncated and cut.truncated
    assert scorer.predict([]) == []


def test_checkpoint_reloads_without_the_original_encoder_directory(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "encoder-copy"
    shutil.copytree(tiny_encoder_dir, copy)
    config = LensConfig(encoder=str(copy), hidden_sizes=(8,), max_length=24)
    model = LensModel(config, HFEncoder.from_pretrained(str(copy), max_length=24)).eval()
    inputs = [(s.complex, s.output, s.references) for s in make_samples(2, 3, seed=9)]
    before = LensScorer(model, device=torch.device("cpu")).predict(inputs)
    save_checkpoint(model, tmp_path / "ckpt")
    shutil.rmtree(copy)
    after = LensScorer.load(tmp_path / "ckpt", device="cpu").predict(inputs)
    assert [p.z for p in after] == [p.z for p in before]


def test_without_heldout_the_last_epoch_is_kept(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    config = tiny_train_config(tiny_encoder_dir, epochs=2, select_by="loss")
    result = train(config, make_samples(2, 4, seed=0), [], out_dir=tmp_path)
    assert result.best_epoch == 2
    assert result.heldout == {"tau": {}, "pearson": None, "loss": None}


def test_texts_are_encoded_in_batches_of_similar_token_counts(
    tiny_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metrics.lens.inference import embed_in_batches, length_order

    scorer = LensScorer.load(tiny_checkpoint, device="cpu")
    model = scorer.model
    # characters and tokens disagree: one unknown long word is one token; short known words are one each
    texts = ["the cat sat on the mat with a big red car", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
             "a dog ran", "he saw the old man and the new city river park", "it is"]
    order = length_order(model, texts)
    assert order == [1, 4, 2, 0, 3]
    seen: list[list[str]] = []
    pooled = model.pooled_layers

    def recording(chunk: Sequence[str]) -> torch.Tensor:
        seen.append(list(chunk))
        return pooled(chunk)

    monkeypatch.setattr(model, "pooled_layers", recording)
    together = embed_in_batches(model, texts, 2, "fp32")
    assert seen == [[texts[1], texts[4]], [texts[2], texts[0]], [texts[3]]]
    alone = torch.cat([embed_in_batches(model, [t], 1, "fp32") for t in texts])
    assert torch.allclose(together, alone, atol=1e-5)  # padding is masked: the batch changes nothing
