"""The learned kinds (LENS, REFEREE, SIERA...) and the one registry the whole product reads them from.

A kind is a :class:`LearnedKind`: its name and label, its config class, what it trains on, how it trains,
and how a checkpoint of it loads into a :class:`Scorer`. :func:`register_kind` adds one; the built-in kinds
register when their ``kind`` module is imported, which :func:`kinds` does on first use (``BUILTIN``).
Checkpoints say which kind wrote them, so :func:`load` needs only the path.

This module and the kinds' ``kind`` modules import neither Django nor torch: the models, the admin and the
commands read the registry at start-up.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from metrics.learned.checkpoint import checkpoint_kind, checkpoint_sha256
from metrics.learned.config import Json, LearnedConfig
from metrics.learned.research import profile_options

if TYPE_CHECKING:
    from metrics.learned.callbacks import Callback, TrainResult
    from metrics.lens.types import Sample

BUILTIN = ("metrics.lens.kind", "metrics.referee.kind", "metrics.siera.kind", "metrics.blend.kind")
"""The modules that register the built-in kinds (a new kind adds its module here)."""


class Triple(Protocol):
    """What a scorer reads of an item (``metrics.suite.Item`` is one)."""

    @property
    def complex(self) -> str: ...
    @property
    def output(self) -> str: ...
    @property
    def references(self) -> Sequence[str]: ...


class StaleComponentError(RuntimeError):
    """A scorer that reads other metrics (the blend) found one changed since it was trained: its scores
    would not mean what its version says, so it refuses (the product answers 409)."""


@dataclass(frozen=True)
class ComponentRead:
    """One metric a version reads (a blend's component): its name and its signature when the version was
    trained and now."""

    name: str
    trained: str
    now: str

    @property
    def changed(self) -> bool:
        return self.now != self.trained


def stale_components(read: Sequence[ComponentRead]) -> StaleComponentError | None:
    """The refusal naming every component of ``read`` that changed since training (None: none did)."""
    changed = [f"{c.name} was {c.trained!r}, is {c.now!r}" for c in read if c.changed]
    if not changed:
        return None
    return StaleComponentError("the blend's components changed since it was trained, so its weights no longer "
                               "apply; train a new blend version: " + "; ".join(changed))


Scored = tuple[float, dict[str, float]]
"""A metric value and its named components (e.g. ``truncated``: 1.0 when the input was cut)."""


class Scorer(Protocol):
    """A loaded checkpoint, ready to score."""

    def score(self, items: Sequence[Triple]) -> list[Scored]:
        """One (value, components) per item, in order."""
        ...


@dataclass(frozen=True)
class VersionInfo:
    """What a score's signature says about the version that produced it."""

    pk: int
    encoder: str
    encoder_identity: dict[str, Json]
    seed: int
    k: int
    hyperparameters: dict[str, Json]
    checkpoint_path: str
    serving_precision: str
    suite_version: str


@dataclass(frozen=True)
class TrainingInputs:
    """What a version trains on, gathered by the product (or an experiment).

    Attributes:
        train: Rated outputs to fit (empty for a kind that reads no ratings).
        heldout: Rated outputs that select the best epoch.
        corpus: (source id, complex, references) rows of the chosen corpora (empty for a kind that reads none).
        learned: (kind, version) of the other kinds' active versions, for a kind that ``reads_learned``.
        learned_training: What each of those versions learned from, by version id (a kind that reads them
            cross-fits the ones trained on its own sources; a version absent here cannot be checked).
    """

    train: Sequence[Sample] = ()
    heldout: Sequence[Sample] = ()
    corpus: Sequence[tuple[str, str, Sequence[str]]] = ()
    learned: Sequence[tuple[str, VersionInfo]] = ()
    learned_training: Mapping[int, LearnedTraining] = field(default_factory=dict)


@dataclass(frozen=True)
class LearnedData:
    """A version's training data as they can be read again: its stored config, its inputs, and what reading
    them found (e.g. that they changed since the version was trained)."""

    config: LearnedConfig
    inputs: TrainingInputs
    warnings: Sequence[str] = ()


@dataclass(frozen=True)
class LearnedTraining:
    """What a learned version learned from, for a kind that stacks on it (the blend's cross-fitting).

    Attributes:
        source_keys: The complex sentences it trained on (``annotation.rules.sentence_key``).
        data: Reads its training data again (only when the kind needs them: that reads the database).
    """

    source_keys: frozenset[str]
    data: Callable[[], LearnedData]


@dataclass(frozen=True)
class LearnedKind(ABC):
    """One learned metric of the family.

    Attributes:
        name: Registry key, metric family name (``lens``, ``lens:latest``, ``lens:<id>``) and checkpoint ``kind``.
        label: Shown to people ("LENS").
        config_class: The kind's options (a :class:`LearnedConfig`).
        needs_campaigns: Fine-tunes on rated campaigns.
        uses_corpora: May read corpora of (source, references) rows.
        needs_references: Its metric reads references (and its rated training outputs need some).
        value_name: What a score's value is (``z``, ``p_simpler``), in its signature.
        reads_learned: Reads the other kinds' active versions (the blend): the product passes them in
            :attr:`TrainingInputs.learned`.
    """

    name: str
    label: str
    config_class: type[LearnedConfig]
    needs_campaigns: bool = True
    uses_corpora: bool = False
    needs_references: bool = False
    value_name: str = "z"
    reads_learned: bool = False

    def config(self, options: dict[str, Json]) -> LearnedConfig:
        """The validated config of a person's options (ConfigError naming a bad one); ``profile="research"``
        fills in the kind's research settings under the person's own
        (:func:`metrics.learned.research.profile_options`)."""
        return self.config_class.from_options(profile_options(self.name, options))

    def stored_config(self, hyperparameters: dict[str, Json], *, device: str | None = None) -> LearnedConfig:
        """The config a version row stores (``to_dict``), on ``device``."""
        return self.config_class.from_dict({**hyperparameters, "device": device})

    @abstractmethod
    def train(self, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
              callbacks: Sequence[Callback]) -> TrainResult:
        """Train a version; its best checkpoint is written to ``out_dir / "best"``."""

    @abstractmethod
    def load(self, path: Path, *, device: str | None = None, precision: str = "fp32") -> Scorer:
        """A checkpoint of this kind, ready to score on ``device`` at the serving ``precision``."""

    def signature(self, version: VersionInfo) -> str:
        """What a stored score says about its version: kind, version, encoder, seed, weights, value."""
        sha = checkpoint_sha256(version.checkpoint_path)[:12]
        name = version.encoder_identity.get("name_or_path") or version.encoder
        return (f"{self.name}:v{version.pk}|enc:{Path(str(name)).name}|seed:{version.seed}|ckpt:{sha}|"
                f"value:{self.value_name}|{self.signature_extra(version)}version:{version.suite_version}")

    def signature_extra(self, version: VersionInfo) -> str:
        """Kind-specific signature fields before ``version:`` (each ending in ``|``)."""
        return ""

    def components(self, version: VersionInfo) -> list[ComponentRead]:
        """The metrics the version reads, with their signatures when it was trained and now (none for a kind
        that reads no other metric; [] too when its checkpoint cannot be read)."""
        return []

    def scores_empty_outputs(self, version: VersionInfo) -> bool:
        """Whether the version defines a value for an empty output (a trained encoder does not: it never saw
        one; the blend does when every component it reads does). Where the product scores, an empty output is
        left unscored by a version that does not."""
        return False

    def training_preview(self, config: LearnedConfig, inputs: TrainingInputs, *, source_keys: AbstractSet[str],
                         seconds: Mapping[int, float | None]) -> list[str]:
        """What a run of ``config`` will cost beyond its own training, for the user to read before it starts
        (the blend: the learned components it trains again to cross-fit them, and up to how many times).

        Args:
            inputs: The other kinds' versions it would read (``learned`` and ``learned_training``; no samples).
            source_keys: The complex sentences of the campaigns it would train on.
            seconds: Each of those versions' own training time, by id (None: unknown).
        """
        return []



@dataclass(frozen=True)
class PairKind(LearnedKind):
    """A reference-free kind scoring "complex [SEP] output" pairs (REFEREE, SIERA), from a corpus of (source,
    references) rows and, when it ``needs_campaigns``, rated outputs too.

    Its torch code is named, not imported, so registering it stays light: ``<package>.training.train`` takes
    ``(config, corpus[, train, heldout], *, out_dir, callbacks)`` and ``<package>.scorer.<scorer>.load(path,
    device=...)`` returns its :class:`Scorer`.
    """

    package: str = ""
    scorer: str = ""

    def train(self, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
              callbacks: Sequence[Callback]) -> TrainResult:
        assert isinstance(config, self.config_class)
        rated = (inputs.train, inputs.heldout) if self.needs_campaigns else ()
        train = importlib.import_module(f"{self.package}.training").train
        result: TrainResult = train(config, inputs.corpus, *rated, out_dir=out_dir, callbacks=callbacks)
        return result

    def load(self, path: Path, *, device: str | None = None, precision: str = "fp32") -> Scorer:
        scorer_class = getattr(importlib.import_module(f"{self.package}.scorer"), self.scorer)
        scorer: Scorer = scorer_class.load(path, device=device)
        return scorer


@dataclass
class _Registry:
    kinds: dict[str, LearnedKind] = field(default_factory=dict)
    loaded: bool = False


_REGISTRY = _Registry()


def register_kind(kind: LearnedKind) -> LearnedKind:
    """Add ``kind`` to the registry (replacing one of the same name); returns it."""
    _REGISTRY.kinds[kind.name] = kind
    return kind


def unregister_kind(name: str) -> None:
    """Remove a kind (tests that register a throw-away one)."""
    _REGISTRY.kinds.pop(name, None)


def kinds() -> dict[str, LearnedKind]:
    """Every registered kind by name, the built-in ones first."""
    if not _REGISTRY.loaded:
        _REGISTRY.loaded = True
        for module in BUILTIN:
            importlib.import_module(module)
    return dict(_REGISTRY.kinds)


def kind_names() -> tuple[str, ...]:
    return tuple(kinds())


def kind_labels() -> dict[str, str]:
    return {name: kind.label for name, kind in kinds().items()}


def get_kind(name: str) -> LearnedKind:
    """The kind ``name``; a KeyError naming the registered ones otherwise."""
    registered = kinds()
    try:
        return registered[name]
    except KeyError:
        raise KeyError(f"unknown learned metric {name!r}; one of: {', '.join(registered)}") from None


def load(path: Path | str, *, device: str | None = None, precision: str = "fp32") -> Scorer:
    """Load any learned checkpoint (the kind it names reads it), ready to score."""
    return get_kind(checkpoint_kind(Path(path))).load(Path(path), device=device, precision=precision)
