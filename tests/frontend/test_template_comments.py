"""Django's `{# ... #}` comment ends at the end of its line: one spread over several lines is not a comment but
text printed on the page (issue 44: step 1 of the annotation page showed "{# Step 1 is on screen when the page
opens ..." to annotators, seen in the crowd study's phone screenshots). Longer notes use {% comment %}."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OPEN_COMMENT = re.compile(r"\{#(?![^\n]*#\})")


def test_no_template_has_a_comment_spread_over_lines() -> None:
    templates = [p for p in ROOT.glob("*/templates/**/*.html") if ".venv" not in p.parts]
    assert templates
    unclosed = [f"{p.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
                for p in templates for text in [p.read_text(encoding="utf-8")] for m in OPEN_COMMENT.finditer(text)]
    assert not unclosed, f"{{# ... #}} must close on its line (use {{% comment %}}): {unclosed}"
