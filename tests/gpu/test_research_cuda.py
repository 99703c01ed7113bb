"""The research configuration on a CUDA device (issue 47): its larger batches and mixed precision are chosen
there, training runs under bf16 autocast (where the GPU supports it) and scores as it does in fp32.

Skipped where torch sees no GPU; runs without Django, as the rest of ``tests/gpu``:

    python -m pytest --noconftest -p no:django tests/gpu
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tests.gpu import CUDA_ONLY
from tests.tiny import REFEREE_CORPUS, lens_samples, siera_rows

pytestmark = CUDA_ONLY
pytest_plugins = ["tests.gpu.cuda"]  # encoder_dir


def _autocast_spy(monkeypatch: pytest.MonkeyPatch, model_class: type[torch.nn.Module]) -> list[torch.dtype | None]:
    """Record, at each forward pass of ``model_class``, the CUDA autocast dtype in force (None: none)."""
    seen: list[torch.dtype | None] = []
    forward = model_class.forward

    def spy(self: torch.nn.Module, *args: object, **kwargs: object) -> object:
        seen.append(torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else None)
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(model_class, "forward", spy)
    return seen


def _expected() -> torch.dtype | None:
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else None


def test_referee_research_config_trains_under_autocast_on_cuda(
    encoder_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from metrics.learned.research import RESEARCH, on_device
    from metrics.referee import RefereeConfig, RefereeScorer, train
    from metrics.referee.model import RefereeModel

    config = RefereeConfig(encoder=str(encoder_dir), max_length=24, stages=(3,), finetune_epochs=2, encoder_lr=1e-3,
                           head_lr=3e-3, device="cuda", seed=5, profile="research")
    assert on_device("referee", config, "cpu") == config and config.precision == "fp32"
    config = on_device("referee", config, "cuda")
    assert config.precision == "auto" and config.batch_size == RESEARCH["referee"].on_cuda["batch_size"]
    seen = _autocast_spy(monkeypatch, RefereeModel)
    samples = lens_samples(8, 4, seed=3)
    result = train(config, REFEREE_CORPUS, samples[:24], samples[24:], out_dir=tmp_path)
    assert result.device.startswith("cuda") and seen and set(seen) == {_expected()}
    assert all(math.isfinite(h["train_loss"]) for h in result.history)
    pairs = [(s.complex, s.output) for s in samples[24:]]
    on_cpu = RefereeScorer.load(result.best_checkpoint, device="cpu").predict(pairs)
    on_gpu = RefereeScorer.load(result.best_checkpoint, device="cuda").predict(pairs)
    assert on_gpu == pytest.approx(on_cpu, abs=1e-4) and len(set(on_cpu)) > 1


def test_siera_research_config_trains_under_autocast_on_cuda(
    encoder_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from metrics.learned.research import on_device
    from metrics.siera import SieraConfig, SieraScorer, train
    from metrics.siera.model import SieraModel

    config = on_device("siera", SieraConfig(encoder=str(encoder_dir), max_length=24, epochs=2, device="cuda",
                                            profile="research"), "cuda")
    assert config.precision == "auto" and config.batch_size == 64
    seen = _autocast_spy(monkeypatch, SieraModel)
    rows = siera_rows()
    result = train(config, rows, out_dir=tmp_path)
    assert result.device.startswith("cuda") and seen and set(seen) == {_expected()}
    pairs = [(c, refs[0]) for _, c, refs in rows[:4]]
    on_cpu = SieraScorer.load(result.best_checkpoint, device="cpu").predict(pairs)
    on_gpu = SieraScorer.load(result.best_checkpoint, device="cuda").predict(pairs)
    assert on_gpu == pytest.approx(on_cpu, abs=1e-4)


def test_lens_research_config_on_cuda_encodes_in_larger_batches_under_bf16(encoder_dir: Path) -> None:
    from metrics.learned.research import on_device
    from metrics.lens.config import LensConfig, TrainConfig
    from metrics.lens.inference import autocast_dtype

    config = TrainConfig(model=LensConfig(encoder=str(encoder_dir)), profile="research", device="cuda")
    gpu = on_device("lens", config, "cuda")
    assert gpu.encode_batch_size == 128 and on_device("lens", config, "cpu") == config
    assert autocast_dtype(torch.device("cuda"), gpu.precision) == _expected()
