"""LENS checkpoints in the family's format (:mod:`metrics.learned.checkpoint`): ``model.safetensors``, the
encoder's assets and ``learned_config.json`` with ``kind`` "lens", the :class:`TrainConfig` under ``config``.

Checkpoints written before the family's format (``lens_config.json``, format ``rank-and-rate-lens/1``) load
the same way. Everything needed to rebuild the model is inside the directory, so loading never reaches the
network, whatever encoder was trained (hub name, local path, or a tiny test encoder built from a config).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import torch

from metrics.learned.checkpoint import (
    ENCODER_ASSETS_DIR,
    Metadata,
    load_weights,
    read_metadata,
    write_checkpoint,
)
from metrics.learned.config import Json
from metrics.lens.config import LensConfig, TrainConfig
from metrics.lens.encoders import encoder_class
from metrics.lens.model import LensModel

KIND = "lens"
WEIGHTS_FILE = "model.safetensors"


def save_checkpoint(
    model: LensModel,
    directory: Path,
    *,
    train_config: TrainConfig | None = None,
    extra: Mapping[str, Json] | None = None,
) -> Path:
    """Write a checkpoint atomically (into a sibling temporary directory, then renamed)."""
    config = train_config.to_dict() if train_config is not None else {"model": model.config.to_dict()}
    return write_checkpoint(directory, kind=KIND, config=config, modules={"model": model}, encoder=model.encoder,
                            encoder_name=model.config.encoder, metadata=dict(extra or {}))


def lens_config(metadata: Metadata) -> LensConfig:
    """The architecture a LENS checkpoint's metadata records."""
    config = metadata.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    if not isinstance(model, dict):
        raise ValueError("the checkpoint records no LENS architecture")
    return LensConfig.from_dict(model)


def load_checkpoint(directory: Path, device: torch.device | str = "cpu") -> tuple[LensModel, Metadata]:
    """Rebuild the model from a checkpoint directory, offline. Returns the model (eval mode) and metadata."""
    directory = Path(directory)
    metadata = read_metadata(directory)
    if metadata.get("kind") != KIND:
        raise ValueError(f"{directory} is not a LENS checkpoint (kind={metadata.get('kind')!r})")
    config = lens_config(metadata)
    encoder = encoder_class(config.encoder_type).from_assets(
        directory / ENCODER_ASSETS_DIR, max_length=config.max_length
    )
    model = LensModel(config, encoder)
    load_weights(model, directory / WEIGHTS_FILE)
    model.to(device)
    model.eval()
    return model, metadata
