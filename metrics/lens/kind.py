"""LENS in the learned-metric family: its config, training, checkpoint loading and score signature.

Importing this module registers the kind and imports neither torch nor Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from metrics.learned.checkpoint import weights_sha256
from metrics.learned.config import Json, LearnedConfig
from metrics.learned.kinds import LearnedKind, Scorer, TrainingInputs, VersionInfo, register_kind
from metrics.lens.config import TrainConfig

if TYPE_CHECKING:
    from metrics.learned.callbacks import Callback, TrainResult

WEIGHTS_FILE = "model.safetensors"


def lens_loss_name(hyperparameters: Mapping[str, Json]) -> str:
    """The training loss a LENS version's ``TrainConfig`` names: ``topk`` (the paper's Eq. 1) or
    ``topk+rank<W>`` with the within-source ranking term. A version trained before the term existed has no
    ``rank_weight`` and was trained with Eq. 1 alone."""
    weight = hyperparameters.get("rank_weight") or 0.0
    assert isinstance(weight, int | float)
    return f"topk+rank{float(weight):g}" if weight else "topk"


@dataclass(frozen=True)
class LensKind(LearnedKind):
    """LENS: reads the complex sentence, the output and its references; the value is z (max over references)."""

    def train(self, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
              callbacks: Sequence[Callback]) -> TrainResult:
        from metrics.lens.training import train

        assert isinstance(config, TrainConfig)
        return train(config, inputs.train, inputs.heldout, out_dir=out_dir, callbacks=callbacks)

    def load(self, path: Path, *, device: str | None = None, precision: str = "fp32") -> Scorer:
        from metrics.lens.scorer import LensScorer

        # The serving precision names what runs on every device, as the scores' signature says: fp32 is fp32
        # on CUDA too (the core's "auto" would be bf16 there), and int8 refuses a GPU rather than run
        # something else.
        return LensScorer.load(path, device=device, int8=precision == "int8",
                               precision="bf16" if precision == "bf16" else "fp32")

    def signature(self, version: VersionInfo) -> str:
        digests = weights_sha256([Path(version.checkpoint_path) / WEIGHTS_FILE])
        sha = (digests[0] if digests else "missing")[:12]
        encoder = version.encoder_identity.get("name") or version.encoder
        return (f"lens:v{version.pk}|enc:{encoder}|k:{version.k}|loss:{lens_loss_name(version.hyperparameters)}|"
                f"seed:{version.seed}|ckpt:{sha}|{version.serving_precision}|value:z|version:{version.suite_version}")


LENS = register_kind(LensKind("lens", "LENS", TrainConfig, needs_campaigns=True, uses_corpora=False,
                              needs_references=True))
