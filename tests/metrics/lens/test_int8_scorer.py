"""The int8 (dynamically quantised) CPU scorer agrees with the float one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from metrics.lens import LensScorer
from tests.tiny import lens_samples


def test_int8_scores_agree_with_float_scores(tiny_checkpoint: Path) -> None:
    torch.set_num_threads(1)
    samples = lens_samples(6, 4, seed=11)
    triples = [(s.complex, s.output, s.references) for s in samples]
    exact = LensScorer.load(tiny_checkpoint, device="cpu")
    int8 = LensScorer.load(tiny_checkpoint, device="cpu", int8=True)
    assert int8.metadata["int8"] is True
    assert any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in int8.model.encoder.modules())
    assert not any(type(m).__module__.startswith("torch.ao.nn.quantized") for m in exact.model.modules())
    a = np.array([p.z for p in exact.predict(triples)])
    b = np.array([p.z for p in int8.predict(triples)])
    assert np.abs(a - b).max() < 0.05 * max(1.0, float(np.abs(a).max()))
    # The ranking of outputs, which the tau-like reads, is (almost) unchanged.
    assert np.corrcoef(a, b)[0, 1] > 0.99
