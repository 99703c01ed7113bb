"""The research configuration of LENS, REFEREE and SIERA: one choice (``profile="research"``) instead of the
CPU default.

A kind's config has a ``profile`` option: ``"cpu"`` (the default: the bundled MiniLM and the settings measured
to train in minutes on two CPU cores) or ``"research"``: the opt-in all-mpnet-base-v2 encoder and the paper's
training settings where they differ from the CPU default (:data:`RESEARCH`, each with where it comes from),
and, once the worker's device is known, larger batches and mixed precision on a CUDA device
(:func:`on_device`). Options a person gives beside the profile win over its settings. The profile is stored
with the rest of the config, so a version records which one trained it (and :func:`on_device`'s batch sizes
when it ran on a GPU).

The research encoder is never downloaded here: its weights come only from the opt-in, hash-checked install
(``python manage.py install_encoder mpnet``, :mod:`metrics.lens.encoder_install`); choosing the profile
without them is a :class:`ConfigError` naming that command.

Pure: no Django, no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TypeVar

from metrics.learned.config import CPU_PROFILE, PROFILES, RESEARCH_PROFILE, ConfigError, Json, LearnedConfig
from metrics.lens.encoder_install import MPNET, installed_path

__all__ = ["CPU_PROFILE", "PROFILES", "RESEARCH", "RESEARCH_PROFILE", "ResearchSettings", "on_device",
           "profile_options", "research_encoder_check"]
RESEARCH_ENCODER = MPNET.alias
INSTALL_COMMAND = "python manage.py install_encoder mpnet"

C = TypeVar("C", bound=LearnedConfig)


@dataclass(frozen=True)
class ResearchSettings:
    """A kind's research configuration.

    Attributes:
        options: The options the profile sets (the person's own options win over them).
        sources: Why each option differs from the CPU default (the paper's setting, or the measurement).
        on_cuda: What changes when the worker trains on a CUDA device: larger batches, mixed precision.
    """

    options: dict[str, Json]
    sources: dict[str, str]
    on_cuda: dict[str, Json] = field(default_factory=dict)


RESEARCH: dict[str, ResearchSettings] = {
    "lens": ResearchSettings(
        options={"encoder": RESEARCH_ENCODER, "hidden_sizes": [3072, 1024], "freeze_epochs": 1, "head_lr": 1e-5,
                 "rank_weight": 0.0, "select_by": "loss"},
        sources={
            "encoder": "RoBERTa-large in the paper; all-mpnet-base-v2 is the larger offline encoder here",
            "hidden_sizes": "the paper's head: 3072, 1024 (CPU default 1024, 256)",
            "freeze_epochs": "the paper freezes the encoder for 1 epoch, then fine-tunes it (CPU default: frozen "
                             "throughout)",
            "head_lr": "the paper's 1e-5 for the layers other than the encoder (CPU default 1e-4)",
            "rank_weight": "the paper's loss alone (CPU default adds a ranking term of weight 10)",
            "select_by": "the paper selects the checkpoint of the best validation loss (CPU default: held-out τ)",
        },
        # the paper's batch is 8 rated outputs of one source; the encoder passes grow on a GPU
        on_cuda={"encode_batch_size": 128, "precision": "auto"},
    ),
    "referee": ResearchSettings(
        options={"encoder": RESEARCH_ENCODER, "synthetic_epochs": 3, "stage2_epochs": 30, "finetune_epochs": 50,
                 "pretrain_encoder_lr": 1e-5, "encoder_lr": 1e-7},
        sources={
            "encoder": "DeBERTa-v3 in the paper; all-mpnet-base-v2 is the larger offline encoder here",
            "synthetic_epochs": "the paper's at most 3 epochs of stage 1 (CPU default 1)",
            "stage2_epochs": "the paper's at most 30 epochs of stage 2 (CPU default: synthetic_epochs)",
            "finetune_epochs": "the paper's at most 50 epochs of stage 3, the best on the held-out set kept "
                               "(CPU default 6)",
            "pretrain_encoder_lr": "the paper's 1e-5 in stages 1 and 2 (CPU default 2e-5)",
            "encoder_lr": "the paper's 1e-7 in stage 3 (CPU default 5e-5)",
        },
        on_cuda={"batch_size": 64, "precision": "auto"},
    ),
    "siera": ResearchSettings(
        options={"encoder": RESEARCH_ENCODER, "silver": True, "silver_filter": "bertscore"},
        sources={
            "encoder": "bert-base in the paper; all-mpnet-base-v2 is the offline encoder of its size here",
            "silver": "the paper's +Silver augmentation (CPU default: off)",
            "silver_filter": "the paper filters the intermediate sentences with BERTScore (CPU default: token F1)",
        },
        on_cuda={"batch_size": 64, "precision": "auto"},
    ),
}
"""Each kind's research configuration. The settings the papers share with the CPU defaults are not repeated
(LENS: 20 epochs, batch 8, encoder lr 3e-5, dropout 0.15; SIERA: 10 epochs, batch 16, lr 1e-4, the top layer
trained, 20% held out)."""


def research_encoder_check(encoder: str) -> None:
    """Raise a ConfigError naming the install command when ``encoder`` is the research encoder and its
    weights are not installed (nothing is downloaded)."""
    if encoder == RESEARCH_ENCODER and installed_path(MPNET) is None:
        raise ConfigError(
            f"the research configuration needs the {RESEARCH_ENCODER} encoder, which is not installed on this "
            f"machine; install it once with `{INSTALL_COMMAND}` (a hash-checked download), or choose profile "
            f"\"{CPU_PROFILE}\"", key="profile")


def profile_options(kind: str, options: Mapping[str, Json]) -> dict[str, Json]:
    """A person's options with their profile's settings filled in: unchanged for the CPU profile (or none);
    for ``profile="research"`` the kind's :data:`RESEARCH` options, under the person's own. A ConfigError
    when the kind has no research configuration or its encoder is not installed."""
    if options.get("profile") != RESEARCH_PROFILE:
        return dict(options)
    settings = RESEARCH.get(kind)
    if settings is None:
        raise ConfigError(f"{kind} has no research configuration (profiles with one: {', '.join(RESEARCH)})",
                          key="profile")
    merged = {**settings.options, **options}
    research_encoder_check(str(merged.get("encoder")))
    return merged


def on_device(kind: str, config: C, device_type: str) -> C:
    """The config a run trains with on a device of ``device_type`` (``"cuda"``, ``"cpu"``...): a research
    config on CUDA takes its larger batches and mixed precision (:attr:`ResearchSettings.on_cuda`); any other
    config, or any other device, is returned unchanged (the CPU runs fp32)."""
    settings = RESEARCH.get(kind)
    if settings is None or getattr(config, "profile", CPU_PROFILE) != RESEARCH_PROFILE or device_type != "cuda":
        return config
    return replace(config, **settings.on_cuda)
