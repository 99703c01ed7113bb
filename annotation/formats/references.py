"""Reference files: a `.src` file of sources and one or more line-aligned files of references.

Each reference file line holds one or more tab-separated references (SimpEval's `.dst`); several
single-reference files (ASSET's `asset.test.simp.0..9`) are combined line by line.
"""

from __future__ import annotations

from pathlib import Path

from annotation.rules import sentence_key

from .errors import FormatError


def read_reference_files(src: Path, dsts: list[Path]) -> dict[str, list[str]]:
    """Map each source text's :func:`annotation.rules.sentence_key` to its references, in file order (the first
    line wins when a source is listed twice)."""
    src_lines = src.read_text(encoding="utf-8").splitlines()
    columns: list[list[str]] = []
    for dst in dsts:
        lines = dst.read_text(encoding="utf-8").splitlines()
        if len(lines) != len(src_lines):
            raise FormatError(
                f"has {len(lines)} lines but {src.name} has {len(src_lines)}; the files must be line-aligned",
                file=str(dst),
            )
        columns.append(lines)
    mapping: dict[str, list[str]] = {}
    for i, source in enumerate(src_lines):
        if not source.strip():
            continue
        refs = [r for column in columns for r in column[i].split("\t") if r.strip()]
        mapping.setdefault(sentence_key(source), refs)
    return mapping
