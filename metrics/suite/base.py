"""What every metric of the suite is: items in, one :class:`Score` per item out, and a signature."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


class MetricError(ValueError):
    """Bad input for a metric (the message says what and where)."""


class UnknownMetricError(MetricError):
    """A metric name or variant that the registry does not know."""


class MissingReferencesError(MetricError):
    """A metric that needs references was given items without any."""


class EmptyTextError(MetricError):
    """An item whose output (or complex sentence) is empty."""


@dataclass(frozen=True)
class Item:
    """One output to score: its complex (source) sentence, the output, and any references."""

    complex: str
    output: str
    references: tuple[str, ...] = ()

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, where: str = "item") -> Item:
        """Build from ``{"complex", "output", "references"}`` (references optional)."""
        if not isinstance(data, Mapping):
            raise MetricError(f"{where}: expected an object with 'complex', 'output', 'references'")
        texts: dict[str, str] = {}
        for key in ("complex", "output"):
            value = data.get(key)
            if not isinstance(value, str):
                raise MetricError(f"{where}: '{key}' must be a string, got {type(value).__name__}")
            texts[key] = value
        raw_refs = data.get("references") or []
        if isinstance(raw_refs, str) or not isinstance(raw_refs, Sequence):
            raise MetricError(f"{where}: 'references' must be a list of strings")
        refs: list[str] = []
        for j, ref in enumerate(raw_refs):
            if not isinstance(ref, str):
                raise MetricError(f"{where}: references[{j}] must be a string")
            refs.append(ref)
        return cls(complex=texts["complex"], output=texts["output"], references=tuple(refs))


@dataclass(frozen=True)
class Score:
    """A metric's score of one item; ``components`` holds the parts where the metric has them."""

    value: float
    components: Mapping[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, **({"components": dict(self.components)} if self.components else {})}


class Metric(ABC):
    """A text-simplification metric.

    Subclasses set ``name`` (the registry key, with its variant: ``"sari:lens"``), ``needs_references``
    and ``higher_is_better``, and implement :meth:`signature` and :meth:`_score`.
    """

    name: str = ""
    needs_references: bool = True
    higher_is_better: bool = True
    needs_complex: bool = False

    @property
    @abstractmethod
    def signature(self) -> str:
        """Exact variant, sacreBLEU-style: ``name:impl|key:value|...|version:x``."""

    @abstractmethod
    def _score(self, items: Sequence[Item]) -> list[Score]:
        """Score validated items."""

    def validate(
        self, items: Sequence[Item], *, labels: Sequence[str] | None = None, allow_empty: bool = False
    ) -> None:
        """Raise :class:`MetricError` naming the first item this metric cannot score.

        Args:
            items: The batch.
            labels: How to name each item in messages (default ``"item <index>"``).
            allow_empty: Accept empty outputs (released data has a few: a system that output nothing);
                each metric then applies its own definition to the empty text.
        """
        for i, item in enumerate(items):
            where = labels[i] if labels is not None else f"item {i}"
            if not allow_empty and not item.output.strip():
                raise EmptyTextError(f"{self.name}: {where} has an empty output")
            if self.needs_complex and not item.complex.strip():
                raise EmptyTextError(f"{self.name}: {where} has an empty complex sentence")
            if self.needs_references:
                if not item.references:
                    raise MissingReferencesError(
                        f"{self.name} needs references: {where} has none (give 'references' with every item)"
                    )
                for j, ref in enumerate(item.references):
                    if not ref.strip():
                        raise EmptyTextError(f"{self.name}: {where} has an empty reference {j}")

    def score_batch(
        self, items: Iterable[Item], *, labels: Sequence[str] | None = None, allow_empty: bool = False
    ) -> list[Score]:
        """Score every item (in order).

        Args:
            items: ``{complex, output, references}`` items.
            labels: Names of the items for error messages (e.g. ``"items.jsonl line 3"``).
            allow_empty: Score empty outputs instead of refusing them.

        Raises:
            MetricError: an item lacks what the metric needs (references, a non-empty output).
        """
        batch = list(items)
        self.validate(batch, labels=labels, allow_empty=allow_empty)
        return self._score(batch) if batch else []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.signature}>"
