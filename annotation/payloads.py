"""Size and shape limits of what the annotation page sends: the autosaved draft and the submit payload.

Checked before anything else looks at the content (``submission_validate`` and ``annotation_save_draft``
call these first), so a hostile client cannot make the server store or walk megabytes: unknown keys are
refused in the submit payload, lists and strings are bounded, and the whole document has a byte cap. Each error is a
ServiceError (400) naming the field; the caps are deliberately far above what the page ever sends.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from core.errors import ServiceError

STEPS = ("categorise", "edits", "rate")
# The autosaved page state's keys (frontend/static/frontend/annotate/state.js): a draft with any other key is
# refused; one stored before this rule (or the submit payload a submitted annotation keeps) loses its other
# keys when read (``draft_state_read``).
DRAFT_KEYS = frozenset({"format", "revision", "step", "visited", "confirmed", "show_marks", "groups", "edits",
                        "ranking", "ratings", "step_seconds", "step_timestamps", "submit_key"})
# The submit payload's keys (annotation page: main.js) and a judged unit's and an edit's keys.
SUBMIT_KEYS = frozenset({"submit_key", "units", "step_seconds", "step_timestamps", "steps_reviewed"})
# The method needs steps 1 and 2 looked at before the ranking is submitted: each was opened ("visited") or
# the annotator explicitly accepted its automatic result without opening it ("confirmed").
REVIEWED_STEPS = ("categorise", "edits")
REVIEW_WAYS = frozenset({"visited", "confirmed"})
UNIT_KEYS = frozenset({"unit", "category", "edits", "rank", "rating"})
EDIT_KEYS = frozenset({"type", "source_span", "output_span", "anchor"})

MAX_UNITS = 500  # rating units of one source
MAX_EDITS_PER_UNIT = 200
MAX_STAMP_KEYS = 8  # per step: entered, left, last_entered, ...
MAX_STAMP_CHARS = 64  # an ISO timestamp has 24
MAX_DRAFT_BYTES = 256 * 1024
MAX_SUBMIT_BYTES = 256 * 1024


def _size(value: Any, field: str, limit: int) -> None:
    try:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):
        raise ServiceError("not a JSON document", field=field) from None
    if size > limit:
        raise ServiceError(f"{field} is {size:,} bytes; at most {limit:,} are accepted", field=field)


def _known_keys(value: Mapping[str, Any], allowed: frozenset[str], field: str) -> None:
    unknown = sorted(str(k)[:40] for k in value if k not in allowed)
    if unknown:
        where = f"{field}." if field else ""
        raise ServiceError(f"unknown key(s): {', '.join(unknown[:5])} (expected {', '.join(sorted(allowed))})",
                           field=f"{where}{unknown[0]}")


def step_timestamps_check(value: Any, field: str) -> None:
    """``{step: {name: ISO time or number}}`` for the three steps, each with a few short entries."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise ServiceError("step_timestamps must be an object keyed by step", field=field)
    _known_keys(value, frozenset(STEPS), field)
    for step, stamps in value.items():
        here = f"{field}.{step}"
        if not isinstance(stamps, Mapping):
            raise ServiceError("expected an object of timestamps", field=here)
        if len(stamps) > MAX_STAMP_KEYS:
            raise ServiceError(f"at most {MAX_STAMP_KEYS} timestamps per step", field=here)
        for name, stamp in stamps.items():
            if len(name) > MAX_STAMP_CHARS:
                raise ServiceError(f"a timestamp name has at most {MAX_STAMP_CHARS} characters", field=here)
            ok = stamp is None or (isinstance(stamp, str) and len(stamp) <= MAX_STAMP_CHARS) or (
                isinstance(stamp, int | float) and not isinstance(stamp, bool))
            if not ok:
                raise ServiceError(f"a timestamp is a string of at most {MAX_STAMP_CHARS} characters or a number",
                                   field=f"{here}.{name}"[:200])


def _edits_check(edits: Any, field: str) -> None:
    if edits is None:
        return
    if not isinstance(edits, list):
        raise ServiceError("edits must be a list", field=field)
    if len(edits) > MAX_EDITS_PER_UNIT:
        raise ServiceError(f"at most {MAX_EDITS_PER_UNIT} edits per output (got {len(edits)})", field=field)
    for i, edit in enumerate(edits):
        if isinstance(edit, Mapping):
            _known_keys(edit, EDIT_KEYS, f"{field}[{i}]")


def steps_reviewed_check(value: Any, field: str = "steps_reviewed") -> None:
    """``{"categorise": "visited" | "confirmed", "edits": ...}``: both steps before the ranking, each opened
    or explicitly confirmed. The one rule for the page, the REST API and every other client."""
    if not isinstance(value, Mapping):
        raise ServiceError("steps_reviewed is required: say for step 1 (categorise) and step 2 (edits) whether "
                           "each was visited or confirmed", field=field)
    _known_keys(value, frozenset(REVIEWED_STEPS), field)
    for step in REVIEWED_STEPS:
        way = value.get(step)
        if way not in REVIEW_WAYS:
            raise ServiceError(f"step {REVIEWED_STEPS.index(step) + 1} ({step}) was neither visited nor confirmed; "
                               "open it or confirm its automatic result before submitting", field=f"{field}.{step}")


def submit_payload_check(payload: Mapping[str, Any]) -> None:
    """The submit payload's shape and size, and that steps 1 and 2 were reviewed (its content is checked
    against the source afterwards)."""
    _size(payload, "payload", MAX_SUBMIT_BYTES)
    _known_keys(payload, SUBMIT_KEYS, "")
    steps_reviewed_check(payload.get("steps_reviewed"))
    units = payload.get("units")
    if isinstance(units, list):
        if len(units) > MAX_UNITS:
            raise ServiceError(f"at most {MAX_UNITS} units", field="units")
        for i, item in enumerate(units):
            if isinstance(item, Mapping):
                _known_keys(item, UNIT_KEYS, f"units[{i}]")
                _edits_check(item.get("edits"), f"units[{i}].edits")
    step_timestamps_check(payload.get("step_timestamps"), "step_timestamps")


def draft_state_check(state: Mapping[str, Any]) -> None:
    """The autosaved page state (frontend/static/frontend/annotate/state.js): a byte cap on the whole, its
    keys (``DRAFT_KEYS``; an unknown one is a 400 naming it), and bounds on its edits and timestamps. The
    values of its other keys are the page's own business (opaque to the server until it is submitted)."""
    _size(state, "state", MAX_DRAFT_BYTES)
    _known_keys(state, DRAFT_KEYS, "state")
    edits = state.get("edits")
    if edits is not None:
        if not isinstance(edits, Mapping):
            raise ServiceError("edits must be an object keyed by output", field="state.edits")
        if len(edits) > MAX_UNITS:
            raise ServiceError(f"at most {MAX_UNITS} outputs with edits", field="state.edits")
        for unit, unit_edits in edits.items():
            _edits_check(unit_edits, f"state.edits.{str(unit)[:40]}")
    step_timestamps_check(state.get("step_timestamps"), "state.step_timestamps")


def draft_state_read(draft: Any) -> dict[str, Any]:
    """A stored draft as the page gets it: only the ``DRAFT_KEYS`` (drafts saved before the keys were closed
    may hold others; they are dropped here, never refused, so no migration is needed)."""
    if not isinstance(draft, Mapping):
        return {}
    return {key: value for key, value in draft.items() if key in DRAFT_KEYS}
