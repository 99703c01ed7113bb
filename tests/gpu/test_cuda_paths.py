"""The learned metrics' CUDA paths: training, mixed precision, feature caches and serving on a GPU.

Skipped where torch sees no GPU (CI has none). They use the pure cores and the tiny encoder only, with no
database and no Django, so that a machine with a GPU and no web stack runs them with

    python -m pytest --noconftest -p no:django tests/gpu

(`--noconftest` leaves out the suite's fixtures, which need Django). Each test trains or scores on the GPU
and checks the result against the CPU, which the rest of the suite covers.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.gpu import CUDA_ONLY
from tests.tiny import REFEREE_CORPUS, frozen_trainer, lens_samples, siera_rows, tiny_train_config

pytestmark = CUDA_ONLY
pytest_plugins = ["tests.gpu.cuda"]  # encoder_dir


def _triples(n: int) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(s.complex, s.output, s.references) for s in lens_samples(n, 4, seed=11)]


def test_lens_trains_under_cuda_autocast_and_scores_alike_on_either_device(encoder_dir: Path, tmp_path: Path) -> None:
    from metrics.lens import LensScorer, train
    from metrics.lens.inference import autocast_dtype

    device = torch.device("cuda")
    assert autocast_dtype(device, "auto") == (torch.bfloat16 if torch.cuda.is_bf16_supported() else None)
    samples = lens_samples(8, 4, seed=3)
    # "auto": mixed precision on the GPU, the way the training task runs there
    config = tiny_train_config(encoder_dir, epochs=2, device="cuda", precision="auto")
    result = train(config, samples[:24], samples[24:], out_dir=tmp_path)
    assert result.device.startswith("cuda")
    assert all(math.isfinite(h["train_loss"]) for h in result.history)

    triples = _triples(6)
    on_cpu = np.array([p.z for p in LensScorer.load(result.best_checkpoint, device="cpu").predict(triples)])
    on_gpu = np.array([p.z for p in LensScorer.load(result.best_checkpoint, device="cuda",
                                                    precision="fp32").predict(triples)])
    assert np.allclose(on_gpu, on_cpu, atol=1e-4), np.abs(on_gpu - on_cpu).max()
    bf16 = np.array([p.z for p in LensScorer.load(result.best_checkpoint, device="cuda",
                                                  precision="bf16").predict(triples)])
    assert not np.array_equal(bf16, on_cpu)  # reduced precision was applied
    assert np.abs(bf16 - on_cpu).max() <= 0.02 * max(1.0, np.abs(on_cpu).max())
    assert np.corrcoef(bf16, on_cpu)[0, 1] > 0.999


def test_int8_scoring_is_refused_on_the_gpu(encoder_dir: Path, tmp_path: Path) -> None:
    from metrics.lens import LensScorer, train

    samples = lens_samples(4, 4, seed=5)
    result = train(tiny_train_config(encoder_dir, epochs=1, device="cuda"), samples[:12], samples[12:],
                   out_dir=tmp_path)
    with pytest.raises(ValueError, match="int8 scoring quantises for the CPU"):
        LensScorer.load(result.best_checkpoint, device="cuda", int8=True)


def test_a_cached_feature_step_on_the_gpu_equals_a_live_step(encoder_dir: Path, tmp_path: Path) -> None:
    from metrics.lens.training import FeatureCache

    samples = lens_samples(2, 6, seed=0)[:4]
    live, cached = (frozen_trainer(encoder_dir, tmp_path / name, device="cuda", precision="fp32")
                    for name in ("live", "cached"))
    texts = [t for s in samples for t in (s.complex, s.output, *s.references)]
    cached._cache = FeatureCache.build(cached.model, texts, cached.config)
    torch.manual_seed(0)
    live_losses = [live.training_step(samples) for _ in range(2)]
    torch.manual_seed(0)
    cached_losses = [cached.training_step(samples) for _ in range(2)]
    assert cached_losses == pytest.approx(live_losses, abs=1e-5)
    assert live_losses[0] != pytest.approx(live_losses[1], abs=1e-6)


def test_frozen_training_on_the_gpu_with_a_cpu_feature_cache(encoder_dir: Path, tmp_path: Path) -> None:
    """The shared cache lives on the CPU (it is saved and reused across runs); training moves what it reads."""
    from metrics.lens import LensScorer, Trainer
    from metrics.lens.training import FeatureCache

    config = tiny_train_config(encoder_dir, epochs=3, freeze_epochs=3, device="cuda", precision="fp32")
    train, heldout = lens_samples(6, 6, seed=0), lens_samples(2, 6, seed=1)
    cache = FeatureCache([], torch.empty(0, 3, 32))
    result = Trainer(config, out_dir=tmp_path, features=cache).fit(train, heldout)
    assert all(h["frozen_encoder"] for h in result.history)
    assert cache.states.device.type == "cpu" and len(cache.row) > 0
    triples = [(s.complex, s.output, s.references) for s in heldout]
    on_cpu = [p.z for p in LensScorer.load(result.best_checkpoint, device="cpu").predict(triples)]
    on_gpu = [p.z for p in LensScorer.load(result.best_checkpoint, device="cuda", precision="fp32").predict(triples)]
    assert on_gpu == pytest.approx(on_cpu, abs=1e-4)


def test_referee_trains_its_three_stages_on_the_gpu(encoder_dir: Path, tmp_path: Path) -> None:
    """Stage 2 reads the corpus and the rated outputs. The text-only signals come computed, as
    ``experiments/referee_seeds.py`` brings them (a GPU machine may lack textstat and sacrebleu: one that did
    failed this test); the encoder's own signals, cosine and BERTScore, are computed on the GPU."""
    from metrics.referee import RefereeConfig, RefereeScorer, train
    from metrics.referee.config import ENCODER_SIGNALS, REFERENCE_BASED_SIGNALS, REFERENCE_FREE_SIGNALS
    from metrics.referee.data import rated_outputs_corpus, signal_key, synthetic_corpus

    samples = lens_samples(8, 4, seed=3)
    config = RefereeConfig(encoder=str(encoder_dir), max_length=24, batch_size=4, finetune_epochs=2,
                           encoder_lr=1e-3, head_lr=3e-3, device="cuda", seed=5, stage2_data="both")
    text_only = [name for name in (*REFERENCE_FREE_SIGNALS, *REFERENCE_BASED_SIGNALS) if name not in ENCODER_SIGNALS]
    examples = [*synthetic_corpus(REFEREE_CORPUS, config), *rated_outputs_corpus(samples[:24], config)]
    known = {signal_key(e): {name: float((3 * i + j) % 7) for j, name in enumerate(text_only)}
             for i, e in enumerate(examples)}
    result = train(config, REFEREE_CORPUS, samples[:24], samples[24:], out_dir=tmp_path, known_signals=known)
    assert result.device.startswith("cuda")
    assert [h["stage"] for h in result.history] == ["stage1", "stage2", "stage3", "stage3"]
    assert result.heldout["rated_outputs"] > 0 and result.heldout["masked_signals"] == []
    assert all(math.isfinite(h["train_loss"]) for h in result.history)
    pairs = [(s.complex, s.output) for s in samples[24:]]
    on_cpu = RefereeScorer.load(result.best_checkpoint, device="cpu").predict(pairs)
    gpu = RefereeScorer.load(result.best_checkpoint)  # no device: CUDA, where it trained
    assert gpu.device.type == "cuda"
    on_gpu = gpu.predict(pairs)
    assert on_gpu == pytest.approx(on_cpu, abs=1e-4)
    assert len(set(on_cpu)) > 1


def test_siera_trains_its_seeds_on_the_gpu_and_stays_two_way(encoder_dir: Path, tmp_path: Path) -> None:
    from metrics.siera import SieraConfig, SieraScorer, train

    rows = siera_rows()
    config = SieraConfig(encoder=str(encoder_dir), max_length=24, epochs=2, batch_size=4, seeds=(0, 1),
                         silver=True, device="cuda")
    result = train(config, rows, out_dir=tmp_path)
    assert result.device.startswith("cuda")
    pairs = [(c, refs[0]) for _, c, refs in rows[:4]]
    on_cpu = SieraScorer.load(result.best_checkpoint, device="cpu").predict(pairs)
    gpu = SieraScorer.load(result.best_checkpoint)  # no device: CUDA, where it trained
    assert all(next(m.parameters()).device.type == "cuda" for m in gpu.models)
    on_gpu = gpu.predict(pairs)
    back = gpu.prefer([(b, a) for a, b in pairs])
    assert on_gpu == pytest.approx(on_cpu, abs=1e-4)
    assert [s + b for s, b in zip(on_gpu, back, strict=True)] == pytest.approx([1.0] * 4, abs=1e-5)
