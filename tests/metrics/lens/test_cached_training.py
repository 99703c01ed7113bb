"""Training on cached frozen-encoder features is training on the encoder's live outputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from metrics.lens import Trainer
from metrics.lens.training import FeatureCache
from tests.tiny import frozen_trainer, lens_samples, tiny_train_config


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_a_step_on_cached_features_equals_a_step_on_live_encoder_outputs(
    tiny_encoder_dir: Path, tmp_path: Path
) -> None:
    samples = lens_samples(2, 6, seed=0)[:4]
    live = frozen_trainer(tiny_encoder_dir, tmp_path / "live")
    cached = frozen_trainer(tiny_encoder_dir, tmp_path / "cached")
    texts = [t for s in samples for t in (s.complex, s.output, *s.references)]
    cached._cache = FeatureCache.build(cached.model, texts, cached.config)  # eval mode: no random draws

    torch.manual_seed(0)  # same dropout masks in the head for both
    live_losses = [live.training_step(samples) for _ in range(2)]
    torch.manual_seed(0)
    cached_losses = [cached.training_step(samples) for _ in range(2)]

    assert cached_losses == pytest.approx(live_losses, abs=1e-6)
    assert live_losses[0] != pytest.approx(live_losses[1], abs=1e-6)  # the step did update the head
    for (name, a), (_, b) in zip(live.model.head.named_parameters(), cached.model.head.named_parameters(),
                                 strict=True):
        assert torch.allclose(a, b, atol=1e-6), name
    assert torch.allclose(live.model.layer_mix.weights, cached.model.layer_mix.weights, atol=1e-6)


def test_a_shared_feature_cache_is_extended_saved_and_reloaded(tiny_encoder_dir: Path, tmp_path: Path) -> None:
    trainer = frozen_trainer(tiny_encoder_dir, tmp_path / "t")
    cache = FeatureCache.build(trainer.model, ["a cat sat", "a dog ran"], trainer.config)
    cache.extend(trainer.model, ["a dog ran", "the bird flew"], trainer.config)
    assert list(cache.row) == ["a cat sat", "a dog ran", "the bird flew"]
    cache.save(tmp_path / "f.pt")
    again = FeatureCache.load(tmp_path / "f.pt")
    with torch.no_grad():
        live = trainer.model.pooled_layers(["the bird flew"])
    assert torch.allclose(again(["the bird flew"]), live, atol=1e-6)


def test_frozen_training_with_a_shared_cache_writes_one_reloadable_best_checkpoint(
    tiny_encoder_dir: Path, tmp_path: Path
) -> None:
    from metrics.lens import LensScorer

    config = tiny_train_config(tiny_encoder_dir, epochs=3, freeze_epochs=3)
    train, heldout = lens_samples(6, 6, seed=0), lens_samples(2, 6, seed=1)
    trainer = Trainer(config, out_dir=tmp_path, features=FeatureCache([], torch.empty(0, 3, 32)))
    result = trainer.fit(train, heldout)
    assert all(h["frozen_encoder"] for h in result.history)
    scorer = LensScorer.load(result.best_checkpoint, device="cpu")
    trainer.restore_best()
    triple = (heldout[0].complex, heldout[0].output, heldout[0].references)
    [prediction] = scorer.predict([triple])
    trainer.model.eval()
    with torch.no_grad():
        vectors = trainer.model.embed([triple[0], triple[1], *triple[2]])
        direct = trainer.model.score_vectors(vectors[:1], vectors[1:2], vectors[None, 2:])
    assert prediction.z == pytest.approx(float(direct.max()), abs=1e-5)
