"""The bf16 CPU scorer agrees with the float one, and serving picks it from LEARNED_SERVING_PRECISION."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from metrics.lens import LensScorer
from metrics.lens.inference import autocast_dtype
from tests.tiny import lens_samples


def test_only_an_explicit_bf16_leaves_fp32_on_the_cpu() -> None:
    cpu = torch.device("cpu")
    assert autocast_dtype(cpu, "bf16") is torch.bfloat16
    assert autocast_dtype(cpu, "auto") is None
    assert autocast_dtype(cpu, "fp16") is None
    assert autocast_dtype(cpu, "fp32") is None


def test_bf16_scores_agree_with_float_scores(tiny_checkpoint: Path) -> None:
    torch.set_num_threads(1)
    triples = [(s.complex, s.output, s.references) for s in lens_samples(6, 4, seed=11)]
    exact = np.array([p.z for p in LensScorer.load(tiny_checkpoint, device="cpu").predict(triples)])
    bf16 = np.array([p.z for p in LensScorer.load(tiny_checkpoint, device="cpu", precision="bf16").predict(triples)])
    assert not np.array_equal(exact, bf16)  # the encoder did run in bf16
    assert np.abs(exact - bf16).max() < 0.02 * max(1.0, float(np.abs(exact).max()))
    assert np.corrcoef(exact, bf16)[0, 1] > 0.999


@pytest.mark.parametrize(("precision", "int8", "autocast"), [("fp32", False, "fp32"), ("bf16", False, "bf16"),
                                                             ("int8", True, "fp32")])
def test_serving_loads_the_configured_precision(
    tiny_checkpoint: Path, precision: str, int8: bool, autocast: str
) -> None:
    from metrics.learned.kinds import get_kind

    scorer = get_kind("lens").load(tiny_checkpoint, device="cpu", precision=precision)
    assert isinstance(scorer, LensScorer)
    assert scorer.precision == autocast
    assert bool(scorer.metadata.get("int8")) is int8


def test_int8_refuses_a_device_other_than_the_cpu(tiny_checkpoint: Path) -> None:
    # "meta" stands for a GPU here: no hardware is needed to see that the scorer refuses before loading.
    with pytest.raises(ValueError, match="int8 scoring quantises for the CPU; on meta"):
        LensScorer.load(tiny_checkpoint, device="meta", int8=True)
