"""Checkpoint directories: ``model.safetensors`` + ``lens_config.json`` + ``encoder/`` (config, tokenizer).

Everything needed to rebuild the model is inside the directory, so loading never reaches the network,
whatever encoder was trained (hub name, local path, or a tiny test encoder built from a config).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_model, save_model

from metrics.lens.config import LensConfig, TrainConfig
from metrics.lens.encoders import ENCODER_ASSETS_DIR, encoder_class, resolve_encoder_path
from metrics.lens.model import LensModel

FORMAT = "rank-and-rate-lens/1"
WEIGHTS_FILE = "model.safetensors"
CONFIG_FILE = "lens_config.json"


def save_checkpoint(
    model: LensModel,
    directory: Path,
    *,
    train_config: TrainConfig | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write a checkpoint atomically (into a sibling temporary directory, then renamed)."""
    directory = Path(directory)
    staging = directory.with_name(directory.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    save_model(model, str(staging / WEIGHTS_FILE))
    model.encoder.save_assets(staging / ENCODER_ASSETS_DIR)
    encoder_model = getattr(model.encoder, "model", None)
    metadata: dict[str, Any] = {
        "format": FORMAT,
        "model": model.config.to_dict(),
        "encoder": {
            "name_or_path": model.config.encoder,
            "resolved_path": resolve_encoder_path(model.config.encoder),
            "model_type": getattr(getattr(encoder_model, "config", None), "model_type", None),
            "num_layers": model.encoder.num_layers,
            "hidden_size": model.encoder.hidden_size,
            "max_length": model.encoder.max_length,
        },
        "train": train_config.to_dict() if train_config is not None else None,
        **(extra or {}),
    }
    (staging / CONFIG_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n")
    if directory.exists():
        shutil.rmtree(directory)
    staging.rename(directory)
    return directory


def read_metadata(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(directory) / CONFIG_FILE).read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{directory} is not a {FORMAT} checkpoint (format={data.get('format')!r})")
    return data


def load_checkpoint(directory: Path, device: torch.device | str = "cpu") -> tuple[LensModel, dict[str, Any]]:
    """Rebuild the model from a checkpoint directory, offline. Returns the model (eval mode) and metadata."""
    directory = Path(directory)
    metadata = read_metadata(directory)
    config = LensConfig.from_dict(metadata["model"])
    encoder = encoder_class(config.encoder_type).from_assets(
        directory / ENCODER_ASSETS_DIR, max_length=config.max_length
    )
    model = LensModel(config, encoder)
    missing, unexpected = load_model(model, str(directory / WEIGHTS_FILE), strict=False, device="cpu")
    if missing or unexpected:
        raise ValueError(f"checkpoint weights do not match: missing={missing}, unexpected={unexpected}")
    model.to(device)
    model.eval()
    return model, metadata
