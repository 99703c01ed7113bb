"""What a blend reads of an item: its components' scores and simple text features, as one matrix.

A component is a suite metric (``sari``, ``bertscore``...), a learned version (recorded with the
:class:`~metrics.learned.kinds.VersionInfo` its signature is computed from) or a text feature. Each records
the signature it had when the blend was trained; :func:`check_components` refuses to score when one has
changed since (:class:`~metrics.learned.kinds.StaleComponentError`), since the blend's weights were fitted to
the old scores.

Pure: no Django; numpy is imported by the functions that build matrices.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from metrics.learned.config import Json
from metrics.learned.kinds import ComponentRead, Triple, VersionInfo, get_kind, stale_components

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

SUITE_COMPONENTS = ("sari", "sari:lens", "bleu", "gleu", "fkgl", "bertscore", "self-bertscore")
"""The suite metrics a blend may read."""
TEXT_FEATURES_VERSION = "1"
"""Bumped whenever a text feature's definition changes (a blend reading the old one then refuses to score)."""

_SENTENCE_END = re.compile(r"[.!?]+(?=\s+[\"'(\[]?[A-Z0-9]|\s*$)")


def _words(text: str) -> list[str]:
    return text.split()


def sentence_count(text: str) -> float:
    """Sentences of ``text``: ends of sentence (``.``, ``!``, ``?`` before a capital or the end), at least 1
    for a non-empty text."""
    if not text.strip():
        return 0.0
    return float(max(1, len(_SENTENCE_END.findall(text.strip()))))


def _overlap(complex_text: str, output: str) -> float:
    seen = {w.lower() for w in _words(complex_text)}
    words = _words(output)
    return sum(w.lower() in seen for w in words) / len(words) if words else 0.0


TEXT_FEATURES: dict[str, Callable[[str, str], float]] = {
    "length": lambda c, o: float(len(_words(o))),
    "compression": lambda c, o: len(o) / max(1, len(c)),
    "sentences": lambda c, o: sentence_count(o),
    "overlap": _overlap,
}
"""Text features of (complex, output): output words, characters of the output per character of the complex
sentence, output sentences, share of output words found in the complex sentence."""


@dataclass(frozen=True)
class Component:
    """One column of a blend's features.

    Attributes:
        name: ``suite:<metric>``, ``text:<feature>`` or ``learned:<kind>:<id>``.
        signature: What the column's values were computed with, when the blend was trained.
        version: A learned component's version as its signature reads it (None otherwise).
    """

    name: str
    signature: str
    version: VersionInfo | None = None

    @property
    def group(self) -> str:
        """``suite``, ``text`` or ``learned`` (the ablation's groups)."""
        return self.name.partition(":")[0]

    def to_dict(self) -> dict[str, Json]:
        return {"name": self.name, "signature": self.signature,
                "version": asdict(self.version) if self.version is not None else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Component:
        version = data.get("version")
        return cls(name=str(data["name"]), signature=str(data["signature"]),
                   version=VersionInfo(**version) if isinstance(version, Mapping) else None)


def suite_component(metric: str, options: Mapping[str, Any] | None = None) -> Component:
    """The suite metric ``metric`` as a component, with its signature now."""
    from metrics.suite import create_metric

    if metric not in SUITE_COMPONENTS:
        raise ValueError(f"{metric!r} is not a suite metric a blend reads; one of: {', '.join(SUITE_COMPONENTS)}")
    return Component(f"suite:{metric}", create_metric(metric, **dict(options or {})).signature)


def text_component(feature: str) -> Component:
    if feature not in TEXT_FEATURES:
        raise ValueError(f"unknown text feature {feature!r}; one of: {', '.join(TEXT_FEATURES)}")
    return Component(f"text:{feature}", f"text:{feature}|version:{TEXT_FEATURES_VERSION}")


def learned_component(kind: str, version: VersionInfo) -> Component:
    """A learned version as a component (its signature as the metric registry computes it)."""
    return Component(f"learned:{kind}:{version.pk}", get_kind(kind).signature(version), version)


def current_signature(component: Component, options: Mapping[str, Any] | None = None) -> str:
    """The signature the component would have now: a suite metric's own, a text feature's definition, a learned
    version's with its checkpoint's weights as they are on disk now and the suite's version now."""
    from metrics.suite import SUITE_VERSION

    group, _, rest = component.name.partition(":")
    if group == "suite":
        return suite_component(rest, options).signature
    if group == "text":
        return text_component(rest).signature
    assert component.version is not None, component.name
    return get_kind(rest.partition(":")[0]).signature(replace(component.version, suite_version=SUITE_VERSION))


def components_read(components: Sequence[Component], options: Mapping[str, Mapping[str, Any]] | None = None,
                    ) -> list[ComponentRead]:
    """Each component's signature when the blend was trained and now (``unavailable (...)`` for a kind or a
    metric that is no longer registered)."""
    read = []
    for component in components:
        group, _, rest = component.name.partition(":")
        try:
            now = current_signature(component, (options or {}).get(rest) if group == "suite" else None)
        except (KeyError, ValueError) as exc:
            now = f"unavailable ({exc})"
        read.append(ComponentRead(component.name, component.signature, now))
    return read


def check_components(components: Sequence[Component], options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Raise :class:`~metrics.learned.kinds.StaleComponentError` naming every component whose signature
    changed since training."""
    error = stale_components(components_read(components, options))
    if error is not None:
        raise error


def scores_empty_outputs(component: Component) -> bool:
    """Whether the component defines a value for an empty output: a suite metric and a text feature do (each
    its own definition), a learned version as its kind says."""
    group, _, rest = component.name.partition(":")
    if group in ("suite", "text"):
        return True
    assert component.version is not None, component.name
    try:
        return get_kind(rest.partition(":")[0]).scores_empty_outputs(component.version)
    except KeyError:  # a kind that is no longer registered scores nothing
        return False


Scores = Callable[[Component, Sequence[Triple]], list[float]]
"""A component's scores of a batch (the kind's own, or an experiment's cache)."""


def component_scores(component: Component, items: Sequence[Triple], *,
                     options: Mapping[str, Any] | None = None) -> list[float]:
    """The component's values of ``items`` (empty outputs are scored as each metric defines them)."""
    from metrics.learned.kinds import load
    from metrics.suite import Item, create_metric

    group, _, rest = component.name.partition(":")
    if group == "text":
        feature = TEXT_FEATURES[rest]
        return [feature(item.complex, item.output) for item in items]
    batch = [Item(item.complex, item.output, tuple(item.references)) for item in items]
    if group == "suite":
        metric = create_metric(rest, **dict(options or {}))
        return [score.value for score in metric.score_batch(batch, allow_empty=True)]
    assert component.version is not None, component.name
    scorer = load(component.version.checkpoint_path, precision=component.version.serving_precision)
    return [value for value, _ in scorer.score(batch)]


def feature_matrix(components: Sequence[Component], items: Sequence[Triple], scores: Scores | None = None,
                   ) -> NDArray[np.float64]:
    """``[items, components]`` values (``scores``: where a component's values come from; by default
    :func:`component_scores`)."""
    import numpy as np

    read = scores or (lambda component, batch: component_scores(component, batch))
    columns = [np.asarray(read(component, items), dtype=np.float64) for component in components]
    matrix = np.stack(columns, axis=1) if columns else np.zeros((len(items), 0))
    return np.nan_to_num(matrix, nan=0.0, posinf=0.0, neginf=0.0)
