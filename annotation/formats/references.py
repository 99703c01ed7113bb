"""Reference files: a `.src` file of sources and one or more line-aligned files of references.

Each reference file line holds one or more tab-separated references (SimpEval's `.dst`); several
single-reference files (ASSET's `asset.test.simp.0..9`) are combined line by line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from annotation.rules import sentence_key

from .errors import FormatError


def parse_references(src_name: str, src_lines: Sequence[str], dsts: Sequence[tuple[str, Sequence[str]]], *,
                     max_chars: int | None = None) -> dict[str, list[str]]:
    """Map each source text's :func:`annotation.rules.sentence_key` to its references, in file order (the first
    line wins when a source is listed twice). ``dsts`` are (file name, lines) pairs, line-aligned with the
    sources; a reference longer than ``max_chars`` is refused naming its file, line and column."""
    for name, lines in dsts:
        if len(lines) != len(src_lines):
            raise FormatError(
                f"has {len(lines)} lines but {src_name} has {len(src_lines)}; the files must be line-aligned",
                file=name,
            )
    if max_chars is not None:
        for i, source in enumerate(src_lines):
            if len(source) > max_chars:
                raise FormatError(f"a text may have at most {max_chars:,} characters; this one has {len(source):,}",
                                  file=src_name, line=i + 1)
        for name, lines in dsts:
            for i, line in enumerate(lines):
                for k, ref in enumerate(line.split("\t"), start=1):
                    if len(ref) > max_chars:
                        raise FormatError(f"a reference may have at most {max_chars:,} characters; this one has "
                                          f"{len(ref):,}", file=name, line=i + 1, column=f"reference {k}")
    mapping: dict[str, list[str]] = {}
    for i, source in enumerate(src_lines):
        if not source.strip():
            continue
        refs = [r for _, lines in dsts for r in lines[i].split("\t") if r.strip()]
        mapping.setdefault(sentence_key(source), refs)
    return mapping


def read_reference_files(src: Path, dsts: list[Path]) -> dict[str, list[str]]:
    """:func:`parse_references` of files on disk."""
    return parse_references(src.name, src.read_text(encoding="utf-8").splitlines(),
                            [(dst.name, dst.read_text(encoding="utf-8").splitlines()) for dst in dsts])
