"""The training loop's numbers for a fixed seed on the tiny encoder, pinned.

Recorded before ``train`` was split into a trainer with steps and callbacks, so the split is proven to
keep the loss curve, the held-out metrics and the checkpoint selection. The tolerance only absorbs
floating-point differences between CPUs; any change in the order of random draws or of the updates moves
these numbers by far more.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metrics.learned.callbacks import Callback, CancelCallback, EarlyStopping, ProgressEvent, TrainingCancelled
from metrics.lens import Trainer, train
from tests.tiny import lens_samples, tiny_train_config

REL = 1e-4


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_loss_curve_and_heldout_metrics_for_seed_7(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    events: list[ProgressEvent] = []
    result = train(
        tiny_train_config(tiny_encoder_dir, epochs=4),
        lens_samples(8, 6, seed=0),
        lens_samples(3, 6, seed=1),
        out_dir=tmp_path,
        on_progress=events.append,
    )
    history = [
        (h["epoch"], h["train_loss"], h["heldout"]["tau"]["all"], h["heldout"]["pearson"], h["heldout"]["loss"],
         h["best"], h["frozen_encoder"])
        for h in result.history
    ]
    assert history == [
        (1, pytest.approx(1.0606072284, rel=REL), pytest.approx(1.0), pytest.approx(0.9226187297, rel=REL),
         pytest.approx(1.1541033983, rel=REL), True, True),
        (2, pytest.approx(0.8322216421, rel=REL), pytest.approx(0.9310344828), pytest.approx(0.9498977613, rel=REL),
         pytest.approx(0.9143069386, rel=REL), False, False),
        (3, pytest.approx(0.7036243184, rel=REL), pytest.approx(0.9310344828), pytest.approx(0.9748415032, rel=REL),
         pytest.approx(0.8784100413, rel=REL), False, False),
        (4, pytest.approx(0.3707934148, rel=REL), pytest.approx(0.8620689655), pytest.approx(0.9709138177, rel=REL),
         pytest.approx(0.8602129817, rel=REL), False, False),
    ]
    assert result.best_epoch == 1
    steps = [e for e in events if e.kind == "step"]
    assert [e.step for e in steps] == list(range(1, 65))
    assert [e.loss for e in steps[:3]] == pytest.approx([0.815466, 0.856538, 1.182241], rel=REL)
    assert [(e.epoch, e.step, e.is_best) for e in events if e.kind == "epoch"] == [
        (1, 16, True), (2, 32, False), (3, 48, False), (4, 64, False)
    ]


def test_loss_selection_with_clipping_and_early_stopping(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    result = train(
        tiny_train_config(tiny_encoder_dir, epochs=6, patience=1, grad_clip=0.5, select_by="loss"),
        lens_samples(8, 6, seed=0),
        lens_samples(3, 6, seed=1),
        out_dir=tmp_path,
    )
    assert [h["train_loss"] for h in result.history] == pytest.approx(
        [1.0212530270, 0.7859809883, 0.6045196750, 0.3560594788], rel=REL
    )
    assert [h["heldout"]["loss"] for h in result.history] == pytest.approx(
        [1.0204293728, 0.8888841272, 0.8203728796, 0.8387730122], rel=REL
    )
    assert [h["best"] for h in result.history] == [True, True, True, False]  # stopped after one stale epoch
    assert result.best_epoch == 3
    assert result.heldout["tau"] == {}
    assert result.heldout["pearson"] == pytest.approx(0.9671303305, rel=REL)


def test_callbacks_see_every_event_and_can_stop_or_cancel(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    class StopAfterTwoEpochs(Callback):
        def __init__(self) -> None:
            self.kinds: list[str] = []

        def on_progress(self, event: ProgressEvent) -> None:
            self.kinds.append(event.kind)

        def should_stop(self) -> bool:
            return self.kinds.count("epoch") == 2

    watcher = StopAfterTwoEpochs()
    config = tiny_train_config(tiny_encoder_dir, epochs=4, progress_every=4)
    result = Trainer(config, out_dir=tmp_path / "a", callbacks=[watcher]).fit(
        lens_samples(4, 6, seed=0), lens_samples(2, 6, seed=1)
    )
    assert [h["epoch"] for h in result.history] == [1, 2]
    assert watcher.kinds == ["step", "step", "epoch", "step", "step", "epoch"]  # 8 steps per epoch

    polls = {"n": 0}

    def cancel_at_third_poll() -> bool:
        polls["n"] += 1
        return polls["n"] == 3

    with pytest.raises(TrainingCancelled) as info:
        Trainer(config, out_dir=tmp_path / "b", callbacks=[CancelCallback(cancel_at_third_poll)]).fit(
            lens_samples(4, 6, seed=0), lens_samples(2, 6, seed=1)
        )
    # Polled before caching the frozen encoder's states and before each step: cancelled before step 2.
    assert (info.value.epoch, info.value.step, info.value.best_checkpoint) == (1, 1, None)


def test_an_explicit_early_stopping_replaces_the_configured_patience(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    config = tiny_train_config(tiny_encoder_dir, epochs=3, patience=1)
    trainer = Trainer(config, out_dir=tmp_path, callbacks=[EarlyStopping(patience=5)])
    assert [c.patience for c in trainer.callbacks if isinstance(c, EarlyStopping)] == [5]
    assert [c.patience for c in Trainer(config, out_dir=tmp_path).callbacks if isinstance(c, EarlyStopping)] == [1]


def test_heldout_references_selects_on_the_first_n_references(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    train_samples, heldout = lens_samples(6, 4, seed=2), lens_samples(3, 4, seed=3)
    assert {len(s.references) for s in heldout} != {1}
    trimmed = [replace(s, references=s.references[:1]) for s in heldout]
    config = tiny_train_config(tiny_encoder_dir, epochs=2)
    by_option = train(replace(config, heldout_references=1), train_samples, heldout, out_dir=tmp_path / "a")
    by_hand = train(config, train_samples, trimmed, out_dir=tmp_path / "b")
    everything = train(config, train_samples, heldout, out_dir=tmp_path / "c")
    assert by_option.heldout == by_hand.heldout
    assert by_option.heldout["loss"] != everything.heldout["loss"]


def test_by_default_the_encoder_stays_frozen_and_only_the_head_trains(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from metrics.lens import TrainConfig
    from metrics.lens.checkpoint import load_checkpoint
    from metrics.lens.encoders import HFEncoder

    assert TrainConfig().freeze_epochs is None
    config = replace(tiny_train_config(tiny_encoder_dir, epochs=3), freeze_epochs=None)
    result = train(config, lens_samples(6, 4, seed=2), lens_samples(3, 4, seed=3), out_dir=tmp_path)
    assert [h["frozen_encoder"] for h in result.history] == [True, True, True]
    trained, _ = load_checkpoint(result.best_checkpoint)
    original = HFEncoder.from_pretrained(str(tiny_encoder_dir), max_length=24).state_dict()
    for name, value in trained.encoder.state_dict().items():
        assert torch.equal(value, original[name]), name


def test_trainable_layers_fine_tunes_only_the_top_transformer_layers(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    from dataclasses import replace

    from metrics.lens.checkpoint import load_checkpoint
    from metrics.lens.encoders import HFEncoder

    config = replace(tiny_train_config(tiny_encoder_dir, epochs=3, freeze_epochs=1), trainable_layers=1,
                     select_by="loss")
    trainer = Trainer(config, out_dir=tmp_path)
    result = trainer.fit(lens_samples(6, 4, seed=2), lens_samples(3, 4, seed=3))
    assert [h["frozen_encoder"] for h in result.history] == [True, False, False]
    # the tiny encoder has 2 transformer layers: layer.1 trains, layer.0 and the embeddings do not
    trainable = {name for name, p in trainer.model.encoder.named_parameters() if p.requires_grad}
    assert trainable and all(".layer.1." in name for name in trainable)
    original = HFEncoder.from_pretrained(str(tiny_encoder_dir), max_length=24).state_dict()
    changed = {name for name, value in trainer.model.encoder.state_dict().items()
               if not torch.equal(value, original[name])}
    assert changed and changed <= trainable
    if result.best_epoch > 1:  # a fine-tuned checkpoint carries the tuned top layer
        trained, _ = load_checkpoint(result.best_checkpoint)
        assert any(not torch.equal(trained.encoder.state_dict()[n], original[n]) for n in changed)


def test_set_trainable_freezes_all_or_trains_all(tiny_encoder_dir: Path) -> None:
    from metrics.lens.encoders import HFEncoder

    encoder = HFEncoder.from_pretrained(str(tiny_encoder_dir), max_length=24)
    encoder.set_trainable(False, 1)
    assert not any(p.requires_grad for p in encoder.parameters())
    encoder.set_trainable(True)
    assert all(p.requires_grad for p in encoder.parameters())
    encoder.set_trainable(True, 0)
    assert not any(p.requires_grad for p in encoder.parameters())


def test_selection_ranks_tau_over_loss_and_keeps_the_last_unrankable_epoch() -> None:
    from metrics.learned import HeldoutMetrics, improves_on, selection_key

    by_tau = selection_key(HeldoutMetrics(tau={"all": 0.1}, pearson=None, loss=9.0), "tau")
    by_loss = selection_key(HeldoutMetrics(tau={}, pearson=None, loss=0.01), "tau")
    nothing = selection_key(HeldoutMetrics(tau={}, pearson=None, loss=None), "tau")
    assert by_tau == (1, 0.1) and by_loss == (0, -0.01) and nothing is None
    assert improves_on(by_tau, by_loss) and not improves_on(by_loss, by_tau)  # a defined tau outranks a loss
    assert improves_on(nothing, None)  # while nothing could be ranked, each epoch replaces the last
    assert not improves_on(nothing, by_loss) and not improves_on(by_tau, by_tau)  # ties keep the first
    assert selection_key(HeldoutMetrics(tau={"all": 0.1}, pearson=None, loss=2.0), "loss") == (0, -2.0)
