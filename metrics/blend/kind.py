"""The blend in the learned-metric family: its config, training (grouped cross-validation over the training
sources chooses the learner, then it is fitted on every training output), checkpoint and scorer.

A version reads the suite metrics its config names, the text features, and (``learned``) the active version
of every other learned kind that has one, which the product passes in ``TrainingInputs.learned``. The
checkpoint records each component's signature; the scorer refuses to score once one of them has changed.
A learned version trained on the blend's own sources is read out of fold while the blend is fitted
(``crossfit``, :mod:`metrics.blend.crossfit`).

Importing this module registers the kind and imports neither numpy, torch nor Django.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from metrics.learned.checkpoint import CONFIG_FILE, read_metadata, write_checkpoint
from metrics.learned.config import SEED_MAX, SEED_MIN, Json, LearnedConfig, Rule, names_listed
from metrics.learned.config import ConfigError as _ConfigError
from metrics.learned.kinds import (
    ComponentRead,
    LearnedKind,
    Scored,
    Scorer,
    TrainingInputs,
    Triple,
    VersionInfo,
    register_kind,
)

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from metrics.blend.features import Component, Scores
    from metrics.learned.callbacks import Callback, HeldoutMetrics, TrainResult
    from metrics.lens.types import Sample

DEFAULT_SUITE = "sari,bleu,fkgl,bertscore"
DEFAULT_TEXT = "length,compression,sentences,overlap"
FOLDS_MAX = 20
CROSSFIT_MODES = ("auto", "off")
"""The ``crossfit`` option's choices (``metrics.blend.crossfit``)."""


def _names(value: str) -> list[str]:
    """The comma-separated names of an option (``none``: no name)."""
    return [name.strip() for name in value.split(",") if name.strip() and name.strip() != "none"]


@dataclass(frozen=True)
class BlendConfig(LearnedConfig):
    """A blend's options.

    Attributes:
        suite: The suite metrics it reads, comma-separated (``metrics.blend.features.SUITE_COMPONENTS``;
            ``none``: none), each with its defaults (``METRIC_OPTIONS`` do not apply: a blend's scores must not
            depend on the server's settings).
        text: The text features it reads, comma-separated (``metrics.blend.features.TEXT_FEATURES``; ``none``).
        learned: Also read the active version of every other learned kind that has one.
        learner: ``auto`` (cross-validation chooses among every learner's settings) or one learner.
        folds: Source folds of the grouped cross-validation.
        cv: What cross-validation holds out (``metrics.blend.learners.CV_SCHEMES``): ``sources`` (each fold
            scores held-out sources' outputs, by systems seen in training), or ``sources-systems`` (each
            (source fold, system fold) cell scores held-out systems' outputs of held-out sources, fitted on the
            other sources' outputs of the other systems: what scoring new systems on new sources needs). A
            training output's system is its ``output_id`` (a campaign's system name).
        system_folds: System folds of ``sources-systems`` (at most the number of training systems).
        crossfit: ``auto``: a learned component trained on the blend's own sources is read out of fold in
            cross-validation and fitting (``metrics.blend.crossfit``); ``off``: its in-sample scores are read,
            and the version records a warning.
    """

    suite: str = field(default=DEFAULT_SUITE, metadata={"rule": Rule("str", maximum=200)})
    text: str = field(default=DEFAULT_TEXT, metadata={"rule": Rule("str", maximum=200)})
    learned: bool = field(default=True, metadata={"rule": Rule("bool")})
    learner: str = field(default="auto", metadata={"rule": Rule("str", choices=("auto", "ridge", "pairwise",
                                                                                 "kernel"))})
    folds: int = field(default=5, metadata={"rule": Rule("int", minimum=2, maximum=FOLDS_MAX)})
    cv: str = field(default="sources", metadata={"rule": Rule("str", choices=("sources", "sources-systems"))})
    system_folds: int = field(default=3, metadata={"rule": Rule("int", minimum=2, maximum=FOLDS_MAX)})
    crossfit: str = field(default="auto", metadata={"rule": Rule("str", choices=CROSSFIT_MODES)})
    seed: int = field(default=0, metadata={"rule": Rule("int", minimum=SEED_MIN, maximum=SEED_MAX)})
    heldout_fraction: float = field(default=0.1, metadata={"rule": Rule("float", minimum=0, maximum=0.5)})
    encoder: str = field(default="none", metadata={"rule": Rule("str", choices=("none",), settable=False)})
    device: str | None = field(default=None, metadata={"rule": Rule("str", optional=True, settable=False)})

    def validate(self) -> None:
        from metrics.blend.features import SUITE_COMPONENTS, TEXT_FEATURES

        for key, chosen, known in (("suite", _names(self.suite), SUITE_COMPONENTS),
                                   ("text", _names(self.text), tuple(TEXT_FEATURES))):
            unknown = [name for name in chosen if name not in known]
            if unknown:
                raise _ConfigError(f"{key}: unknown {names_listed(unknown)}; choose among {', '.join(known)} "
                                   "(comma-separated)", key=key)
        if not _names(self.suite) and not _names(self.text) and not self.learned:
            raise _ConfigError("suite: a blend reads at least one metric or feature", key="suite")


BLEND_FILE = "blend.json"
"""The fitted model and its components, in the checkpoint directory beside the family's config file."""


class BlendScorer:
    """A loaded blend: its components' scores of a batch, combined by the fitted model."""

    def __init__(self, components: Sequence[Component], model: dict[str, Any],
                 options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.components = list(components)
        self.model = model
        self.options = dict(options or {})
        self._loaded: dict[str, Scorer] = {}

    @classmethod
    def load(cls, path: Path, options: Mapping[str, Mapping[str, Any]] | None = None) -> BlendScorer:
        from metrics.blend.features import Component

        document = json.loads((Path(path) / BLEND_FILE).read_text())
        return cls([Component.from_dict(c) for c in document["components"]], document["model"], options)

    def check(self) -> None:
        """:class:`~metrics.learned.kinds.StaleComponentError` when a component changed since training."""
        from metrics.blend.features import check_components

        check_components(self.components, self.options)

    def score(self, items: Sequence[Triple]) -> list[Scored]:
        from metrics.blend.features import component_scores, feature_matrix
        from metrics.blend.learners import predict

        self.check()

        def read(component: Component, batch: Sequence[Triple]) -> list[float]:
            if component.version is None:
                return component_scores(component, batch, options=self.options.get(component.name.partition(":")[2]))
            scorer = self._loaded.get(component.name)
            if scorer is None:  # each learned component is loaded once per loaded blend
                from metrics.learned.kinds import load

                scorer = self._loaded[component.name] = load(component.version.checkpoint_path,
                                                             precision=component.version.serving_precision)
            return [value for value, _ in scorer.score(batch)]

        x = feature_matrix(self.components, items, read)
        return [(float(value), {}) for value in predict(self.model, x)]


def blend_components(config: BlendConfig, learned: Sequence[tuple[str, VersionInfo]] = (),
                     options: Mapping[str, Mapping[str, Any]] | None = None) -> list[Component]:
    """The components a version of ``config`` reads: its suite metrics, its text features, and (``learned``)
    the given learned versions, in that order."""
    from metrics.blend.features import learned_component, suite_component, text_component

    components = [suite_component(name, (options or {}).get(name)) for name in _names(config.suite)]
    components += [text_component(name) for name in _names(config.text)]
    if config.learned:
        components += [learned_component(kind, version) for kind, version in learned]
    return components


def tau_criterion(samples: Sequence[Sample]) -> Any:
    """The selection criterion on rows of ``samples``: the tau-like against their raw ratings (LENS's), or
    Pearson with their targets when no pair of ratings is ordered."""
    from annotation.rules import TAU_THRESHOLD, UNCATEGORISED
    from evaluation.stats.correlation import TauItem, kendall_tau_like, pearson

    def criterion(rows: NDArray[np.int64], predicted: NDArray[np.float64]) -> float | None:
        chosen = [samples[int(i)] for i in rows]
        items = [TauItem(source=s.source_id, output=s.output_id, category=s.category or UNCATEGORISED,
                         metric=float(m), ratings=s.ratings) for s, m in zip(chosen, predicted, strict=True)]
        tau = kendall_tau_like(items, threshold=TAU_THRESHOLD).value.get("all") if items else None
        if tau is not None:
            return float(tau)
        return pearson([float(v) for v in predicted], [s.z for s in chosen]) if len(chosen) > 2 else None

    return criterion


def heldout_metrics(samples: Sequence[Sample], predicted: Sequence[float]) -> HeldoutMetrics:
    from annotation.rules import TAU_THRESHOLD, UNCATEGORISED
    from evaluation.stats.correlation import TauItem, kendall_tau_like, pearson
    from metrics.learned.callbacks import HeldoutMetrics

    if not samples:
        return HeldoutMetrics(tau={}, pearson=None, loss=None)
    items = [TauItem(source=s.source_id, output=s.output_id, category=s.category or UNCATEGORISED,
                     metric=float(m), ratings=s.ratings) for s, m in zip(samples, predicted, strict=True)]
    tau = dict(kendall_tau_like(items, threshold=TAU_THRESHOLD).value)
    targets = [s.z for s in samples]
    loss = sum((p - t) ** 2 for p, t in zip(predicted, targets, strict=True)) / len(samples)
    return HeldoutMetrics(tau=tau, pearson=pearson(list(predicted), targets) if len(samples) > 2 else None,
                          loss=float(loss))


@dataclass(frozen=True)
class Fitted:
    """A blend fitted in memory: its components, model, and the cross-validation that chose the learner."""

    components: list[Component]
    model: dict[str, Json]
    cross_validation: list[dict[str, Json]]
    chosen: str
    cv_tau: float | None
    """The chosen setting's cross-validated criterion (None: too few sources to cross-validate)."""
    cv: str = "sources"
    """The cross-validation that ran (``sources`` where ``sources-systems`` found fewer than 2 systems)."""


def fit_blend(config: BlendConfig, components: Sequence[Component], train: Sequence[Sample], *,
              scores: Scores | None = None, on_candidate: Any = None, systems: Sequence[str] | None = None,
              criterion: Any = None) -> Fitted:
    """Choose the learner by grouped cross-validation over ``train``'s sources (and, ``cv`` =
    ``sources-systems``, its systems), then fit it on all of ``train`` (``scores``: where the components'
    values come from, by default computed; ``systems``: each training output's system, by default its
    ``output_id``; ``criterion``: what a held-out fold is scored by, by default :func:`tau_criterion` of
    ``train``)."""
    import numpy as np

    from metrics.blend.features import feature_matrix
    from metrics.blend.learners import best, candidates, cross_validate, fit

    x = feature_matrix(components, train, scores)
    y = np.asarray([s.z for s in train], dtype=np.float64)
    groups = [s.source_id for s in train]
    grid = candidates(config.learner)
    folds = min(config.folds, len(set(groups)))
    by_system: Sequence[str] | None = None
    system_folds = 0
    if config.cv == "sources-systems":
        by_system = list(systems) if systems is not None else [s.output_id for s in train]
        if len(by_system) != len(train):
            raise ValueError(f"systems names {len(by_system)} outputs, train has {len(train)}")
        system_folds = min(config.system_folds, len(set(by_system)))
        if system_folds < 2:  # one system: nothing to hold out but sources
            by_system, system_folds = None, 0
    if folds >= 2:
        results = cross_validate(grid, x, y, groups, folds=folds, seed=config.seed,
                                 criterion=criterion if criterion is not None else tau_criterion(train),
                                 on_candidate=on_candidate, systems=by_system, system_folds=system_folds)
        winner = best(results)
        chosen, cv_tau = winner.candidate, winner.mean
        record: list[dict[str, Json]] = [{"candidate": r.candidate.label, "mean": r.mean, "folds": list(r.folds)}
                                         for r in results]
    else:  # too few sources to cross-validate: the first setting of the grid
        chosen, record, cv_tau = grid[0], [], None
    return Fitted(list(components), fit(chosen, x, y, groups), record, chosen.label, cv_tau,
                  "sources-systems" if by_system is not None else "sources")


@dataclass(frozen=True)
class BlendKind(LearnedKind):
    """The blend: reads its components' scores (and references, for the suite metrics that need them)."""

    def train(self, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
              callbacks: Sequence[Callback]) -> TrainResult:
        from metrics.blend.crossfit import crossfit_components
        from metrics.blend.features import feature_matrix
        from metrics.blend.learners import CrossValidation, predict
        from metrics.learned.callbacks import TrainResult
        from metrics.learned.training import BEST_DIR, EpochLoop

        assert isinstance(config, BlendConfig)
        started = time.perf_counter()
        components = blend_components(config, inputs.learned)
        loop = EpochLoop(list(callbacks), total_steps=0)

        def report(result: CrossValidation) -> None:
            # one "epoch" per candidate setting: its cross-validated tau-like, as its held-out figure
            from metrics.learned.callbacks import HeldoutMetrics

            loop.start_epoch()
            loop.check_cancel()
            loop.end_epoch(HeldoutMetrics(tau={"all": result.mean}, pearson=None, loss=None), is_best=False,
                           record={"candidate": result.candidate.label, "cv": list(result.folds)},
                           label=f"cross-validation of {result.candidate.label}")

        crossfitted = crossfit_components(config, components, inputs, loop=loop, callbacks=callbacks,
                                          evaluate=heldout_metrics)
        read = crossfitted.reader()
        fitted = fit_blend(config, components, inputs.train, scores=read, on_candidate=report)
        loop.check_cancel()
        x = feature_matrix(components, inputs.heldout, read) if inputs.heldout else None
        predicted = [float(v) for v in predict(fitted.model, x)] if x is not None else []
        metrics = heldout_metrics(inputs.heldout, predicted)
        loop.start_epoch()
        loop.end_epoch(metrics, is_best=True, record={"candidate": fitted.chosen, "final": True},
                       label=f"{fitted.chosen} fitted on every training output")
        best_dir = Path(out_dir) / BEST_DIR
        crossfit: dict[str, Json] = {"mode": config.crossfit, "components": dict[str, Json](crossfitted.record)}
        write_checkpoint(best_dir, kind=self.name, config=config.to_dict(), modules={}, encoder=None,
                         encoder_name=config.encoder,
                         metadata={"chosen": fitted.chosen, "cv": fitted.cv,
                                   "cross_validation": list[Json](fitted.cross_validation),
                                   "components": [c.name for c in components], "crossfit": crossfit})
        (best_dir / BLEND_FILE).write_text(json.dumps(
            {"components": [c.to_dict() for c in components], "model": fitted.model}, sort_keys=True) + "\n")
        return TrainResult(best_checkpoint=best_dir, best_epoch=loop.epoch,
                           heldout={**metrics.to_dict(), "learner": fitted.chosen, "cv_tau": fitted.cv_tau,
                                    "cv": fitted.cv, "components": [c.name for c in components],
                                    "crossfit": crossfit},
                           train_seconds=time.perf_counter() - started, device="cpu", history=loop.history,
                           warnings=crossfitted.warnings)

    def load(self, path: Path, *, device: str | None = None, precision: str = "fp32") -> Scorer:
        if read_metadata(Path(path)).get("kind") != self.name:
            from metrics.learned.checkpoint import CheckpointError

            raise CheckpointError(f"{path} is not a {self.name} checkpoint")
        return BlendScorer.load(Path(path))

    def training_preview(self, config: LearnedConfig, inputs: TrainingInputs, *, source_keys: AbstractSet[str],
                         seconds: Mapping[int, float | None]) -> list[str]:
        from metrics.blend.crossfit import crossfit_preview

        assert isinstance(config, BlendConfig)
        return crossfit_preview(config, blend_components(config, inputs.learned), inputs.learned_training,
                                source_keys, seconds)

    def components(self, version: VersionInfo) -> list[ComponentRead]:
        from metrics.blend.features import components_read

        try:
            components = BlendScorer.load(Path(version.checkpoint_path)).components
        except (OSError, ValueError, KeyError, TypeError):
            return []
        return components_read(components)

    def scores_empty_outputs(self, version: VersionInfo) -> bool:
        """A blend defines a value for an empty output when every component it reads does."""
        from metrics.blend.features import scores_empty_outputs

        try:
            components = BlendScorer.load(Path(version.checkpoint_path)).components
        except (OSError, ValueError, KeyError):
            return False
        return all(scores_empty_outputs(component) for component in components)

    def signature(self, version: VersionInfo) -> str:
        """``blend:v<id>|learner:...|ckpt:<sha of the fitted model and its components' signatures>|...``."""
        path = Path(version.checkpoint_path)
        try:
            content = (path / BLEND_FILE).read_bytes()
            learner = str(json.loads((path / CONFIG_FILE).read_text()).get("chosen", "?"))
        except (OSError, ValueError):
            content, learner = b"", "missing"
        sha = hashlib.sha256(content).hexdigest()[:12] if content else "missing"
        return (f"blend:v{version.pk}|learner:{learner.partition('(')[0]}|seed:{version.seed}|ckpt:{sha}|"
                f"value:{self.value_name}|version:{version.suite_version}")


BLEND = register_kind(BlendKind("blend", "Blend", BlendConfig, needs_campaigns=True, needs_references=True,
                                reads_learned=True))
