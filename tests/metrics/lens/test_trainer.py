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

from metrics.lens import ProgressEvent, train
from tests.metrics.lens.factories import make_samples, tiny_train_config

REL = 1e-4


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_loss_curve_and_heldout_metrics_for_seed_7(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    events: list[ProgressEvent] = []
    result = train(
        tiny_train_config(tiny_encoder_dir, epochs=4),
        make_samples(8, 6, seed=0),
        make_samples(3, 6, seed=1),
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
        make_samples(8, 6, seed=0),
        make_samples(3, 6, seed=1),
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
