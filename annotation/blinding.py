"""Opaque ids for what annotators see, so that nothing in the page tells one system from another.

Rating-unit ids follow import order (and so the systems' order in the file): sorted, they would map to
the same systems in every source. Annotators get, instead, a token per (assignment, unit): an HMAC keyed
by the project's secret, the same on every reload of the assignment (drafts keep working) and unrelated
across assignments and to the import order. The tutorial pages use the (annotator, tutorial source) pair
as the scope. Researchers keep the real ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from django.utils.crypto import salted_hmac

_SALT = "annotation.blinding.unit"
T = TypeVar("T")


def assignment_scope(assignment_id: int) -> str:
    return f"assignment:{assignment_id}"


def tutorial_scope(*, annotator_id: int, source_id: int) -> str:
    return f"tutorial:{annotator_id}:{source_id}"


def unit_token(*, scope: str, unit_id: int) -> str:
    """The id an annotator sees for rating unit ``unit_id`` in ``scope`` (16 hex digits, 64 bits)."""
    return "u" + salted_hmac(_SALT, f"{scope}|{unit_id}", algorithm="sha256").hexdigest()[:16]


def tokens_for(*, scope: str, units: Iterable[T], key: Any = None) -> dict[str, T]:
    """``{token: unit}`` for the units of one scope; ``key(unit)`` gives a unit's id (default ``unit.pk``)."""
    ident = key or (lambda unit: unit.pk)
    return {unit_token(scope=scope, unit_id=int(ident(unit))): unit for unit in units}


def answers_with_unit_ids(answers: Iterable[Any], *, tokens: Mapping[str, int]) -> list[Any]:
    """A copy of the page's answers (``[{"unit": token, ...}]``) with each known token replaced by the
    unit's id; anything else is left as sent, for the validation to name."""
    out: list[Any] = []
    for answer in answers:
        if isinstance(answer, Mapping) and isinstance(answer.get("unit"), str) and answer["unit"] in tokens:
            out.append({**answer, "unit": tokens[answer["unit"]]})
        else:
            out.append(answer)
    return out
