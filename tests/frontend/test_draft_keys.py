"""The page's autosaved state and the server's closed list of draft keys must not drift apart."""

from __future__ import annotations

import re
from pathlib import Path

from annotation.payloads import DRAFT_KEYS

STATE_JS = Path(__file__).resolve().parents[2] / "frontend" / "static" / "frontend" / "annotate" / "state.js"


def test_every_key_the_page_saves_is_a_draft_key_the_server_accepts() -> None:
    source = STATE_JS.read_text()
    body = source[source.index("export function initialState"):source.index("export function normaliseState")]
    literal = body[body.index("return {"):]
    named = set(re.findall(r"(?:^|[{,\s])([a-z_]+):", literal))  # key: value
    shorthand = set(re.findall(r"(?:^|[{,\s])([a-z_]+)(?=\s*,)", literal)) - {"null", "true", "false"}  # key,
    step_seconds = {"categorise", "rate"}  # the keys of the step_seconds value, not of the state
    saved = (named | shorthand) - step_seconds
    assert saved, "no keys found in initialState"
    assert saved == set(DRAFT_KEYS), (sorted(saved - DRAFT_KEYS), sorted(set(DRAFT_KEYS) - saved))
