"""The one checkpoint format of every learned kind, and the readers of the older layouts.

A checkpoint is a directory: one ``<name>.safetensors`` per module the kind saves, the encoder's assets
(``encoder/``: config and tokenizer, so loading never reaches the network) and ``learned_config.json``::

    {"format": "rank-and-rate-learned/1", "kind": "lens", "config": {...the kind's config...},
     "encoder_identity": {...}, ...what the kind adds}

``kind`` names the registered kind that reads it back (:func:`metrics.learned.kinds.load` dispatches on it).
:func:`read_metadata` also reads the layouts written before this one, as the same document: REFEREE's and
SIERA's ``learned_config.json`` without ``format`` (their options under ``train``) and LENS's
``lens_config.json`` (format ``rank-and-rate-lens/1``: options under ``train``, architecture under ``model``,
the encoder's identity under ``encoder``).

Importing this module does not import torch; writing, reading encoders and weights do.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from metrics.learned.config import Json

if TYPE_CHECKING:
    from torch import nn

    from metrics.lens.encoders import TextEncoder

FORMAT = "rank-and-rate-learned/1"
CONFIG_FILE = "learned_config.json"
ENCODER_ASSETS_DIR = "encoder"
LEGACY_LENS_FORMAT = "rank-and-rate-lens/1"
LEGACY_LENS_CONFIG_FILE = "lens_config.json"

Metadata = dict[str, Json]


class CheckpointError(ValueError):
    """A directory that is not a learned-metric checkpoint, or not one of the expected kind."""


def write_checkpoint(
    directory: Path, *, kind: str, config: Mapping[str, Json], modules: Mapping[str, nn.Module],
    encoder: TextEncoder | None, encoder_name: str, metadata: Mapping[str, Json] | None = None,
) -> Path:
    """Write ``<name>.safetensors`` per module, the encoder's assets and the metadata, atomically (into a
    sibling directory, then renamed).

    Args:
        directory: The checkpoint directory (replaced when it exists).
        kind: The registered kind that reads it back.
        config: The kind's config (``to_dict``).
        modules: What to save, by file name (none: a kind without torch weights, e.g. the blend, writes its
            own files into the directory afterwards).
        encoder: The encoder whose assets (config, tokenizer) are saved beside (None: a kind without one).
        encoder_name: The encoder's HF name, local path or alias (recorded in ``encoder_identity``).
        metadata: Whatever else the kind records (its epoch, held-out results, signal statistics...).
    """
    directory = Path(directory)
    staging = directory.with_name(directory.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if modules:  # torch is imported only by a kind that saves weights
        from safetensors.torch import save_model

        for name, module in modules.items():
            save_model(module, str(staging / f"{name}.safetensors"))
    identity: Metadata = {"name_or_path": encoder_name}
    if encoder is not None:
        encoder.save_assets(staging / ENCODER_ASSETS_DIR)
        inner = getattr(encoder, "model", None)
        identity.update(resolved_path=_resolved(encoder_name),
                        model_type=getattr(getattr(inner, "config", None), "model_type", None),
                        hidden_size=encoder.hidden_size, num_layers=encoder.num_layers, max_length=encoder.max_length)
    document: Metadata = {**(metadata or {}), "format": FORMAT, "kind": kind, "config": dict(config),
                          "encoder_identity": identity}
    (staging / CONFIG_FILE).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(directory, ignore_errors=True)
    staging.rename(directory)
    return directory


def _resolved(name: str) -> str:
    from metrics.lens.encoders import resolve_encoder_path

    try:
        return resolve_encoder_path(name)
    except (ImportError, FileNotFoundError):
        return name


def read_metadata(directory: Path) -> Metadata:
    """The checkpoint's document in the current layout (see the module docstring), whichever layout wrote it.

    Raises:
        CheckpointError: ``directory`` holds no learned-metric checkpoint.
    """
    directory = Path(directory)
    current = directory / CONFIG_FILE
    if current.is_file():
        data = _object(json.loads(current.read_text()), current)
        if "format" not in data:  # REFEREE's and SIERA's layout before the family's format
            return {**data, "format": FORMAT, "config": data.get("train")}
        if data["format"] != FORMAT:
            raise CheckpointError(f"{directory} is a {data['format']!r} checkpoint, not {FORMAT!r}")
        return data
    legacy = directory / LEGACY_LENS_CONFIG_FILE
    if legacy.is_file():
        return _from_legacy_lens(_object(json.loads(legacy.read_text()), legacy), directory)
    raise CheckpointError(f"{directory} is not a learned-metric checkpoint (no {CONFIG_FILE})")


def _object(value: Json, path: Path) -> Metadata:
    if not isinstance(value, dict):
        raise CheckpointError(f"{path} does not hold a JSON object")
    return value


def _from_legacy_lens(data: Metadata, directory: Path) -> Metadata:
    """A LENS checkpoint's ``lens_config.json`` as the current layout: the options (``train``, or only the
    architecture when it was saved without them) under ``config``, the encoder's identity apart."""
    if data.get("format") != LEGACY_LENS_FORMAT:
        raise CheckpointError(f"{directory} is not a {LEGACY_LENS_FORMAT} checkpoint (format={data.get('format')!r})")
    model = data.get("model")
    train = data.get("train")
    config: Json = {**train, "model": model} if isinstance(train, dict) else {"model": model}
    rest = {k: v for k, v in data.items() if k not in ("format", "encoder", "train")}
    identity = data.get("encoder")
    return {**rest, "format": FORMAT, "kind": "lens", "config": config,
            "encoder_identity": identity if isinstance(identity, dict) else {}}


def checkpoint_kind(directory: Path) -> str:
    """The kind that wrote the checkpoint in ``directory``."""
    kind = read_metadata(directory).get("kind")
    if not isinstance(kind, str):
        raise CheckpointError(f"{directory}: the checkpoint does not say which kind wrote it")
    return kind


def read_checkpoint(directory: Path, *, kind: str, max_length: int | None = None) -> tuple[Metadata, TextEncoder]:
    """The metadata of a ``kind`` checkpoint and its encoder architecture (untrained weights), offline.

    The encoder reads as many tokens as the version was trained with, or ``max_length`` when given (an
    experiment's override, e.g. to compare read lengths on one checkpoint; serving never passes it).
    """
    from metrics.lens.encoders import encoder_class

    directory = Path(directory)
    metadata = read_metadata(directory)
    if metadata.get("kind") != kind:
        raise CheckpointError(f"{directory} is not a {kind} checkpoint (kind={metadata.get('kind')!r})")
    identity = metadata.get("encoder_identity")
    stored = identity.get("max_length") if isinstance(identity, dict) else None
    length = int(metadata.get("max_length") or stored or 0) if max_length is None else max_length  # type: ignore[arg-type]
    encoder = encoder_class("hf").from_assets(directory / ENCODER_ASSETS_DIR, max_length=length)
    return metadata, encoder


def load_weights(module: nn.Module, path: Path) -> None:
    """Load a safetensors file into ``module`` (on the CPU); a ValueError when the names do not match."""
    from safetensors.torch import load_model

    missing, unexpected = load_model(module, str(path), strict=False, device="cpu")
    if missing or unexpected:
        raise ValueError(f"{path}: weights do not match (missing={missing}, unexpected={unexpected})")


@lru_cache(maxsize=32)
def _file_sha256(path: str, mtime_ns: int, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(files: Sequence[Path]) -> list[str]:
    """sha256 of each weight file that exists (cached on its path, mtime and size)."""
    digests = []
    for weights in files:
        try:
            stat = weights.stat()
        except OSError:
            continue
        digests.append(_file_sha256(str(weights), stat.st_mtime_ns, stat.st_size))
    return digests


def checkpoint_sha256(directory: Path | str) -> str:
    """sha256 over a checkpoint's weight files (each file's sha256, in name order, joined by ``|``);
    ``"missing"`` when it has none."""
    digests = weights_sha256(sorted(Path(directory).glob("*.safetensors")))
    return hashlib.sha256("|".join(digests).encode()).hexdigest() if digests else "missing"
