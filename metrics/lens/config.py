"""LENS's typed options: ``LensConfig`` rebuilds the architecture; ``TrainConfig`` drives training.

Both are :class:`metrics.learned.config.LearnedConfig` s: every option carries its own :class:`Rule` (type,
bounds, choices), checked on construction, so the admin form, the LENS page, the REST API and the commands
all get the same answer by building a config: an invalid or unknown option is a :class:`ConfigError`
naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Self, get_args

from annotation.rules import TAU_THRESHOLD
from metrics.learned.config import (
    BATCH_SIZE_MAX,
    DEFAULT_ENCODER,
    EPOCHS_MAX,
    HIDDEN_LAYERS_MAX,
    HIDDEN_SIZE_MAX,
    LAYERS_MAX,
    MAX_LENGTH_MAX,
    MAX_TOKENS,
    PROFILES,
    PROGRESS_EVERY_MAX,
    SEED_MAX,
    SEED_MIN,
    ConfigError,
    Json,
    LearnedConfig,
    Rule,
    names_listed,
)

__all__ = ["ACTIVATION_NAMES", "DEFAULT_ENCODER", "MAX_TOKENS", "OPTION_RULES", "LensConfig", "Precision",
           "SelectBy", "TrainConfig"]

Precision = Literal["auto", "fp32", "bf16", "fp16"]
SelectBy = Literal["tau", "loss"]
ACTIVATION_NAMES = ("tanh", "relu", "gelu")
"""Head activations ``metrics.lens.model.ACTIVATIONS`` provides."""


@dataclass(frozen=True)
class LensConfig(LearnedConfig):
    """Architecture of a LENS model.

    Attributes:
        encoder: HF model name, local directory, or ``DEFAULT_ENCODER``.
        encoder_type: Key in the encoder registry (``metrics.lens.encoders.ENCODERS``).
        hidden_sizes: Widths of the feed-forward head's hidden layers (the paper: 3072, 1024; the default is
            smaller, see experiments/README.md).
        dropout: Dropout in the head.
        activation: Head activation (a key of ``metrics.lens.model.ACTIVATIONS``).
        layer_mix: Mix all hidden layers with learned softmax weights; False uses the last layer only.
        max_length: Upper bound on tokens per text (the encoder's own limit applies too).
    """

    encoder: str = field(default=DEFAULT_ENCODER, metadata={"rule": Rule("str", maximum=500)})
    encoder_type: str = field(default="hf", metadata={"rule": Rule("str", settable=False)})
    hidden_sizes: tuple[int, ...] = field(default=(1024, 256), metadata={"rule": Rule(
        "ints", minimum=1, maximum=HIDDEN_SIZE_MAX, max_items=HIDDEN_LAYERS_MAX)})
    dropout: float = field(default=0.15, metadata={"rule": Rule("float", minimum=0, maximum=1)})
    activation: str = field(default="tanh", metadata={"rule": Rule("str", choices=ACTIVATION_NAMES)})
    layer_mix: bool = field(default=True, metadata={"rule": Rule("bool")})
    max_length: int = field(default=MAX_TOKENS, metadata={"rule": Rule("int", minimum=1, maximum=MAX_LENGTH_MAX)})


@dataclass(frozen=True)
class TrainConfig(LearnedConfig):
    """Training hyper-parameters (defaults from the LENS paper, Appendix A).

    Attributes:
        model: Architecture.
        k: Top-k of the reference-adaptive loss (clamped per sample to its number of references).
        rank_weight: Weight of a ranking term added to the top-k loss: RankNet's logistic loss over the pairs
            of outputs of a batch (one source) that the humans rated differently, on the max-over-references
            scores (``metrics.lens.loss.pairwise_rank_loss``). 0 is the paper's loss (see experiments/README.md for
            the default).
        epochs: Maximum number of epochs.
        batch_size: Rated samples per optimisation step (drawn from one source, see ``batching``).
        encoder_lr: AdamW learning rate of the encoder.
        head_lr: AdamW learning rate of the layer mix and the feed-forward head.
        weight_decay: AdamW weight decay.
        freeze_epochs: Epochs with a frozen encoder (its pooled layer states are cached then); None: every
            epoch, so only the layer mix and the head train (the CPU default, see metrics/lens/README.md).
            The paper's recipe is 1 (then fine-tuning, with head_lr 1e-5 and epochs 20).
        trainable_layers: In the fine-tuning epochs (after ``freeze_epochs``), the number of top transformer
            layers that train; None: the whole encoder (embeddings included), as the paper does.
        seed: Seed of every random choice (initialisation, shuffling, dropout, the held-out split).
        device: "cpu", "cuda", "cuda:1"...; None picks CUDA when available. Set by the platform.
        precision: Autocast: on CUDA "auto" = bf16 where supported, else fp32; the CPU runs fp32 unless "bf16".
        select_by: Checkpoint selection: held-out tau_all ("tau", falls back to the held-out loss when
            tau is undefined) or the held-out loss ("loss").
        patience: Stop after this many epochs without improvement (None: run all epochs).
        tau_threshold: Minimum rating gap (0-100) for a pair to count in the tau-like.
        encode_batch_size: Texts per encoder pass when caching or evaluating.
        progress_every: Emit a step event every this many steps.
        grad_clip: Max gradient norm (None: no clipping).
        heldout_fraction: Share of the sources held out for checkpoint selection (the platform's split).
        heldout_references: References of each held-out sample used for selection (the first n; None: all),
            so that selection resembles a one-reference test set such as SimpEval_2022.
        profile: "cpu" (these defaults) or "research" (the larger encoder and the paper's settings, filled in
            by ``metrics.learned.research.profile_options`` when the options are chosen).
    """

    model: LensConfig = field(default_factory=LensConfig, metadata={"config": LensConfig})
    k: int = field(default=3, metadata={"rule": Rule("int", minimum=1, maximum=20)})
    rank_weight: float = field(default=10.0, metadata={"rule": Rule("float", minimum=0, maximum=100)})
    epochs: int = field(default=20, metadata={"rule": Rule("int", minimum=1, maximum=EPOCHS_MAX)})
    batch_size: int = field(default=8, metadata={"rule": Rule("int", minimum=1, maximum=BATCH_SIZE_MAX)})
    encoder_lr: float = field(default=3e-5, metadata={"rule": Rule("float", minimum=0)})
    head_lr: float = field(default=1e-4, metadata={"rule": Rule("float", minimum=0)})
    weight_decay: float = field(default=0.01, metadata={"rule": Rule("float", minimum=0)})
    freeze_epochs: int | None = field(
        default=None, metadata={"rule": Rule("int", minimum=0, maximum=EPOCHS_MAX, optional=True)}
    )
    trainable_layers: int | None = field(
        default=None, metadata={"rule": Rule("int", minimum=0, maximum=LAYERS_MAX, optional=True)}
    )
    seed: int = field(default=0, metadata={"rule": Rule("int", minimum=SEED_MIN, maximum=SEED_MAX)})
    device: str | None = field(default=None, metadata={"rule": Rule("str", optional=True, settable=False)})
    precision: Precision = field(default="auto", metadata={"rule": Rule("str", choices=get_args(Precision))})
    select_by: SelectBy = field(default="tau", metadata={"rule": Rule("str", choices=get_args(SelectBy))})
    patience: int | None = field(
        default=None, metadata={"rule": Rule("int", minimum=1, maximum=EPOCHS_MAX, optional=True)}
    )
    tau_threshold: float = field(default=TAU_THRESHOLD, metadata={"rule": Rule("float", minimum=0, maximum=100)})
    encode_batch_size: int = field(default=32, metadata={"rule": Rule("int", minimum=1, maximum=BATCH_SIZE_MAX)})
    progress_every: int = field(default=10, metadata={"rule": Rule("int", minimum=1, maximum=PROGRESS_EVERY_MAX)})
    grad_clip: float | None = field(
        default=None, metadata={"rule": Rule("float", minimum=0, above=True, optional=True)}
    )
    heldout_fraction: float = field(default=0.1, metadata={"rule": Rule("float", minimum=0, maximum=0.5)})
    heldout_references: int | None = field(
        default=None, metadata={"rule": Rule("int", minimum=1, maximum=100, optional=True)}
    )
    profile: str = field(default="cpu", metadata={"rule": Rule("str", choices=PROFILES)})

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> Self:
        """Build from the flat options a person chooses (``OPTION_RULES``: encoder, k, epochs, batch_size,
        hidden_sizes, ...); omitted ones keep their defaults. Unknown or invalid ones raise ConfigError."""
        unknown = sorted(set(options) - set(OPTION_RULES))
        if unknown:
            raise ConfigError(f"unknown training option(s): {names_listed(unknown)}", key=unknown[0])
        model_keys = set(LensConfig.rules())
        model = LensConfig(**{k: v for k, v in options.items() if k in model_keys})  # type: ignore[arg-type]
        return cls(model=model, **{k: v for k, v in options.items() if k not in model_keys})  # type: ignore[arg-type]

    @classmethod
    def option_rules(cls) -> dict[str, Rule]:
        return dict(OPTION_RULES)

    def options(self) -> dict[str, Json]:
        """The flat options that rebuild this config with ``from_options`` (a retrain starts from them)."""
        model, train = self.model.to_dict(), self.to_dict()
        data = {key: model[key] for key, rule in LensConfig.rules().items() if rule.settable}
        data.update({key: train[key] for key, rule in TrainConfig.rules().items() if rule.settable})
        return data

    @property
    def encoder_name(self) -> str:
        return self.model.encoder

    @property
    def first_seed(self) -> int:
        return self.seed

    @property
    def top_k(self) -> int:
        return self.k


OPTION_RULES: dict[str, Rule] = {
    key: rule
    for key, rule in [*LensConfig.rules().items(), *TrainConfig.rules().items()]
    if rule.settable
}
"""Every option a person may set when starting a training run, with its rule (forms and serializers read
their bounds from here)."""
