"""A quick stand-in for the text-analysis engine: word-level diff edits, the paper's category rule.

Browser tests and the page benchmark need realistic `RatingUnit.analysis` data without loading
spaCy and the alignment model.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from annotation.models import RatingUnit, Source


def _words(text: str) -> list[tuple[str, int, int]]:
    return [(m.group().lower().strip(".,;"), m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def fake_analysis(source: str, output: str, threshold: float = 0.5) -> tuple[str, dict[str, Any]]:
    src, out = _words(source), _words(output)
    edits: list[dict[str, Any]] = []
    matcher = difflib.SequenceMatcher(a=[w for w, _, _ in src], b=[w for w, _, _ in out], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "delete":
            anchor = out[j1][1] if j1 < len(out) else len(output)
            edits.append({"type": "deletion", "source_span": [src[i1][1], src[i2 - 1][2]], "output_span": None,
                          "anchor": anchor})
        elif tag in ("insert", "replace"):
            edits.append({"type": "paraphrase", "source_span": [src[i1][1], src[i2 - 1][2]] if i2 > i1 else None,
                          "output_span": [out[j1][1], out[j2 - 1][2]], "anchor": None})
    for m in re.finditer(r"[.!?] +(?=\S)", output):
        edits.append({"type": "split", "source_span": None, "output_span": None, "anchor": m.end()})
    ratio = len(output) / max(1, len(source))
    sentences = len(re.findall(r"[.!?](\s|$)", output))
    only_deleted = all(e["type"] == "deletion" for e in edits) and bool(edits)
    if sentences > 1:
        category, rule = "split", "output has more sentences than the source"
    elif ratio < threshold:
        category, rule = "deletion", "compression ratio below the threshold"
    elif only_deleted:
        category, rule = "deletion", "output made only by deleting words"
    else:
        category, rule = "paraphrase", "neither split nor deletion"
    reasons = {"compression_ratio": round(ratio, 4), "threshold": threshold, "source_sentences": 1,
               "output_sentences": sentences, "deletion_only": only_deleted, "rule": rule}
    return category, {"edits": edits, "reasons": reasons, "category": category}


def analyse_source(source: Source) -> None:
    units = list(RatingUnit.objects.filter(source=source))
    for unit in units:
        unit.auto_category, unit.analysis = fake_analysis(source.text, unit.text)
    RatingUnit.objects.bulk_update(units, ["auto_category", "analysis"])
