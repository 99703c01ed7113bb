"""Value objects returned by the analysis engine (pure data, JSON round-trippable)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

EditType = Literal["deletion", "paraphrase", "split"]
Category = Literal["split", "deletion", "paraphrase"]
Span = tuple[int, int]

EDIT_TYPES: tuple[EditType, ...] = ("deletion", "paraphrase", "split")
CATEGORIES: tuple[Category, ...] = ("split", "deletion", "paraphrase")


def _span_from_json(value: Any) -> Span | None:
    if value is None:
        return None
    start, end = value
    return (int(start), int(end))


@dataclass(frozen=True)
class Edit:
    """One highlighted change between a source and an output.

    Character offsets are end-exclusive.

    * ``deletion``: ``source_span`` has no counterpart in the output; ``anchor`` is
      the output offset where the caret goes; ``output_span`` is None.
    * ``paraphrase``: ``output_span`` is new or changed text; ``source_span`` is
      the source text it replaces (None for a pure insertion); ``anchor`` is None.
      A moved word is a deletion at its old place plus a paraphrase at its new
      place whose ``source_span`` points back at the old place.
    * ``split``: an added sentence boundary; ``anchor`` is the output offset where
      the ``||`` goes; both spans are None.
    """

    type: EditType
    source_span: Span | None = None
    output_span: Span | None = None
    anchor: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "source_span": list(self.source_span) if self.source_span else None,
            "output_span": list(self.output_span) if self.output_span else None,
            "anchor": self.anchor,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edit:
        kind = data["type"]
        if kind not in EDIT_TYPES:
            raise ValueError(f"unknown edit type: {kind!r}")
        anchor = data.get("anchor")
        return cls(
            type=cast(EditType, kind),
            source_span=_span_from_json(data.get("source_span")),
            output_span=_span_from_json(data.get("output_span")),
            anchor=None if anchor is None else int(anchor),
        )

    def sort_key(self) -> tuple[int, int, int, int]:
        """Deterministic order: by output position, then type, then source position."""
        if self.output_span is not None:
            out_pos = self.output_span[0]
        else:
            out_pos = self.anchor if self.anchor is not None else -1
        src_pos = self.source_span[0] if self.source_span is not None else -1
        src_end = self.source_span[1] if self.source_span is not None else -1
        return (out_pos, EDIT_TYPES.index(self.type), src_pos, src_end)


@dataclass(frozen=True)
class Analysis:
    """Result of analysing one (source, output) pair.

    ``error`` is set (and the other fields hold neutral values) when the pair
    could not be analysed; no exception escapes ``analyze_many``.

    ``degraded`` is True when the pair needed the token encoder (stage 4 of the
    alignment) and the encoder failed: the result comes from the lexical stages
    only, and ``engine_version`` carries the ``+lexical`` suffix so that it is
    redone once the encoder works.
    """

    category: Category
    reasons: dict[str, Any]
    edits: list[Edit]
    features: dict[str, float | int | bool]
    engine_version: str
    error: str | None = None
    degraded: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "reasons": dict(self.reasons),
            "edits": [edit.to_dict() for edit in self.edits],
            "features": dict(self.features),
            "engine_version": self.engine_version,
            "error": self.error,
            "degraded": self.degraded,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Analysis:
        category = data["category"]
        if category not in CATEGORIES:
            raise ValueError(f"unknown category: {category!r}")
        return cls(
            category=cast(Category, category),
            reasons=dict(data.get("reasons", {})),
            edits=[Edit.from_dict(item) for item in data.get("edits", [])],
            features=dict(data.get("features", {})),
            engine_version=str(data["engine_version"]),
            error=data.get("error"),
            degraded=bool(data.get("degraded", False)),
        )
