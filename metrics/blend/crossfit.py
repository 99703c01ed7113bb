"""Cross-fitting a blend's learned components: out-of-fold scores for a learned version trained on the blend's
own sources.

A learned version trained on the blend's training campaign has seen those outputs' ratings: its scores of
them are in-sample, better than it scores new outputs, so a blend fitted on them (and cross-validated on them)
weights it more than it deserves on new data. A component *overlaps* when the complex sentences it trained on
(``annotation.rules.sentence_key``) meet the blend's. With ``crossfit=auto``, each overlapping component is
scored out of fold: the blend's training sources are cut into the cross-validation's folds
(:func:`metrics.blend.learners.grouped_folds`, the blend's ``folds`` and ``seed``), and for every fold that
holds sentences the component trained on, its kind is trained again with the version's stored config on the
version's own training data minus that fold's sentences, in a temporary directory, and scores the fold's
outputs. The blend's held-out outputs are treated as one more part the same way, so its held-out figures are
out of sample too. A fold the component never saw is scored by the version itself (its scores of it are
already out of sample). The blend's cross-validation and final fit read these values; a trained blend scores
with the real version, as always. ``crossfit=off`` reads the in-sample scores and records a warning.

Pure: no Django; numpy and the kinds' torch code are imported when a component is cross-fitted.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from annotation.rules import sentence_key
from metrics.learned.config import Json
from metrics.learned.kinds import LearnedTraining, TrainingInputs, Triple, get_kind

if TYPE_CHECKING:
    from metrics.blend.features import Component, Scores
    from metrics.blend.kind import BlendConfig
    from metrics.learned.callbacks import Callback, HeldoutMetrics
    from metrics.learned.training import EpochLoop
    from metrics.lens.types import Sample


SampleKey = tuple[str, str, str, tuple[str, ...]]


def sample_key(item: Triple) -> SampleKey:
    """What an out-of-fold value is stored under: the sample's source (which says its fold, so which model
    scored it) and what that model read of it (complex sentence, output, references)."""
    return (str(getattr(item, "source_id", "")), item.complex, item.output, tuple(item.references))


@dataclass
class CrossFitted:
    """The out-of-fold values of the cross-fitted components, and what the run did.

    Attributes:
        values: Component name -> :func:`sample_key` of a training or held-out sample -> its out-of-fold value
            (by content, so a copy of a sample reads the same value, and a sample listed twice is one value).
        record: Component name -> ``folds`` (K), ``trainings`` (the kind's trainings it took), ``heldout``
            (whether the held-out outputs were scored out of sample too), ``shared_sources`` and ``seconds``.
        warnings: What was read in sample, or could not be checked.
    """

    values: dict[str, dict[SampleKey, float]] = field(default_factory=dict)
    record: dict[str, dict[str, Json]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def reader(self) -> Scores:
        """The blend's features of a batch: the out-of-fold values of a cross-fitted component, the computed
        scores of any other."""
        from metrics.blend.features import component_scores

        def read(component: Component, batch: Sequence[Triple]) -> list[float]:
            column = self.values.get(component.name)
            if column is None:
                return component_scores(component, batch)
            missing = [key for key in map(sample_key, batch) if key not in column]
            if missing:
                raise ValueError(f"{component.name} has no out-of-fold value of {len(missing)} of these outputs "
                                 f"(e.g. one of source {missing[0][0]!r}): it was cross-fitted on others")
            return [column[sample_key(item)] for item in batch]

        return read


def crossfit_bound(config: BlendConfig, sources: int) -> int:
    """The most trainings cross-fitting takes of one component, for a blend of ``sources`` sources: one per
    fold (``folds``, at most one per source) and one for the held-out part."""
    return min(config.folds, sources) + (1 if config.heldout_fraction > 0 else 0)


def crossfit_preview(config: BlendConfig, components: Sequence[Component], trainings: Mapping[int, LearnedTraining],
                     source_keys: AbstractSet[str], seconds: Mapping[int, float | None]) -> list[str]:
    """One line per learned component that a blend training on the sentences ``source_keys`` would cross-fit
    (or, ``crossfit=off``, read in sample), with the trainings it would take: what the user reads before the
    run starts (``seconds``: each version's own training time by id, the cost of one training)."""
    lines = []
    for component in components:
        training = trainings.get(component.version.pk) if component.version is not None else None
        shared = training.source_keys & source_keys if training is not None else set()
        if not shared:
            continue
        if config.crossfit == "off":
            lines.append(f"{component.name} trained on {len(shared)} of these sources; crossfit=off reads its "
                         "in-sample scores (the version will say so in a warning)")
            continue
        bound = crossfit_bound(config, len(source_keys))
        took = seconds.get(component.version.pk) if component.version is not None else None
        cost = f" (its own training took {took:.0f} s: up to about {bound * took:.0f} s in all)" if took else ""
        lines.append(f"{component.name} trained on {len(shared)} of these sources, so it is cross-fitted: it is "
                     f"trained again up to {bound} times before the blend is fitted{cost}; crossfit=\"off\" "
                     "skips this and reads its in-sample scores")
    return lines


def _keys(samples: Sequence[Sample]) -> set[str]:
    return {sentence_key(s.complex) for s in samples}


def _without(inputs: TrainingInputs, keys: set[str]) -> TrainingInputs:
    """``inputs`` without the rated outputs and corpus rows of the sentences ``keys``."""
    return replace(inputs, train=[s for s in inputs.train if sentence_key(s.complex) not in keys],
                   heldout=[s for s in inputs.heldout if sentence_key(s.complex) not in keys],
                   corpus=[row for row in inputs.corpus if sentence_key(row[1]) not in keys])


def crossfit_components(
    config: BlendConfig, components: Sequence[Component], inputs: TrainingInputs, *, loop: EpochLoop,
    callbacks: Sequence[Callback], evaluate: Callable[[Sequence[Sample], list[float]], HeldoutMetrics],
) -> CrossFitted:
    """Out-of-fold values of every learned component of ``components`` that trained on the blend's sources
    (see the module docstring); ``inputs.learned_training`` says what each learned version trained on.

    Each training of a component is one epoch of ``loop`` (its event's held-out figures: ``evaluate`` of the
    fold's outputs and the component's out-of-fold values); a cancel stops the run before the next one, or
    inside it through the kind's own loop.
    """
    from metrics.blend.learners import grouped_folds

    out = CrossFitted()
    train, heldout = list(inputs.train), list(inputs.heldout)
    blend_keys = _keys(train) | _keys(heldout)
    groups = [s.source_id for s in train]
    folds = min(config.folds, len(set(groups)))  # crossfit_bound's count, less the held-out part
    both = set(groups) & {s.source_id for s in heldout}
    for component in components:
        if component.version is None:
            continue
        training = inputs.learned_training.get(component.version.pk)
        if training is None:
            out.warnings.append(f"{component.name}: what it trained on is unknown, so it was read as it is "
                                "(in sample if it trained on the blend's sources)")
            continue
        shared = training.source_keys & blend_keys
        if not shared:
            continue
        if config.crossfit == "off":
            out.warnings.append(
                f"{component.name} trained on {len(shared)} of the blend's sources and crossfit=off: its scores "
                "of them are in sample, so the blend's cross-validation and fit overweight it")
            continue
        if folds < 2:
            out.warnings.append(f"{component.name} trained on the blend's sources, which are too few to "
                                "cross-fit (fewer than 2): its scores of them are in sample")
            continue
        if both:  # each source's outputs are read from one model, its part's
            raise ValueError(f"cross-fitting {component.name}: {len(both)} source(s) have outputs both in the "
                             f"blend's training and held-out outputs (e.g. {sorted(both)[0]!r}); split them by "
                             "source")
        parts: list[tuple[str, list[Sample]]] = [
            (f"fold {index + 1}/{folds}", [train[int(i)] for i in rows])
            for index, (_, rows) in enumerate(grouped_folds(groups, folds, config.seed))]
        if heldout:
            parts.append(("held-out", heldout))
        out.values[component.name], out.record[component.name] = _crossfit(
            component, training, parts, folds=folds, shared=len(shared), loop=loop, callbacks=callbacks,
            evaluate=evaluate, warnings=out.warnings)
        if config.cv == "sources-systems":
            out.warnings.append(
                f"{component.name} is cross-fitted by source folds only: its values of a held-out system's outputs "
                "come from a model that trained on that system's outputs of other sources, so the "
                "sources-systems cross-validation is optimistic about it on new systems")
    return out


def _crossfit(
    component: Component, training: LearnedTraining, parts: Sequence[tuple[str, list[Sample]]], *, folds: int,
    shared: int, loop: EpochLoop, callbacks: Sequence[Callback],
    evaluate: Callable[[Sequence[Sample], list[float]], HeldoutMetrics], warnings: list[str],
) -> tuple[dict[SampleKey, float], dict[str, Json]]:
    """One component's out-of-fold values of every sample of ``parts``, and its record."""
    from metrics.blend.features import component_scores
    from metrics.learned.callbacks import CancelOf, TrainingCancelled

    assert component.version is not None
    started = time.perf_counter()
    kind = get_kind(component.name.split(":")[1])
    data = None
    values: dict[SampleKey, float] = {}
    seen: list[Sample] = []  # the parts the version never trained on: its own scores are out of sample
    trainings, heldout_refit = 0, False
    for label, part in parts:
        keys = _keys(part)
        if not keys & training.source_keys:
            seen += part
            continue
        if data is None:
            data = training.data()
            warnings.extend(f"{component.name}: {warning}" for warning in data.warnings)
        without = _without(data.inputs, keys)
        if kind.needs_campaigns and not without.train:
            raise ValueError(f"cross-fitting {component.name}: without the blend's {label} it has no training "
                             "outputs left; train the blend with crossfit=\"off\" or more folds")
        loop.start_epoch()
        loop.check_cancel()
        with tempfile.TemporaryDirectory(prefix="blend-crossfit-") as directory:
            try:
                result = kind.train(data.config, without, out_dir=Path(directory),
                                    callbacks=[CancelOf(list(callbacks))])
            except TrainingCancelled:
                raise TrainingCancelled(epoch=loop.epoch, step=loop.step, best_checkpoint=None) from None
            scorer = kind.load(result.best_checkpoint, device=data.config.device,
                               precision=component.version.serving_precision)
            scored = [value for value, _ in scorer.score(part)]
        values.update(zip(map(sample_key, part), scored, strict=True))
        trainings += 1
        heldout_refit = heldout_refit or label == "held-out"
        loop.end_epoch(evaluate(part, scored), is_best=False,
                       record={"crossfit": component.name, "part": label, "outputs": len(part)},
                       label=f"cross-fitting {component.name}, {label}")
    if seen:
        values.update(zip(map(sample_key, seen), component_scores(component, seen), strict=True))
    record: dict[str, Json] = {"folds": folds, "trainings": trainings, "heldout": heldout_refit,
                               "shared_sources": shared, "seconds": time.perf_counter() - started}
    return values, record
