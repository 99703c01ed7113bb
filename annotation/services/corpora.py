"""Named corpora without ratings (ASSET validation...), imported once from line-aligned text files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

from django.db import transaction

from annotation.formats import FormatError
from annotation.models import Corpus, CorpusItem
from annotation.services.imports import import_limits, upload_text
from core.budgets import reference_files_check
from core.errors import Conflict, ServiceError, TooLarge


def _lines(file: IO[bytes], filename: str, field: str) -> tuple[list[str], str]:
    """The file's lines (trailing blank ones dropped) and its SHA-256, within an import's limits: the bytes
    (MAX_UPLOAD_BYTES), the lines (IMPORT_MAX_SOURCES) and each line's characters (IMPORT_MAX_TEXT_CHARS)."""
    try:
        text, digest = upload_text(file, filename, field=field)
    except FormatError as exc:
        raise ServiceError(str(exc), field=field) from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    limits = import_limits()
    if len(lines) > limits.sources:
        raise TooLarge(f"{filename} has {len(lines):,} lines; a corpus may have at most {limits.sources:,} "
                       "(IMPORT_MAX_SOURCES)", field=field)
    for i, line in enumerate(lines):
        if len(line) > limits.text_chars:
            raise ServiceError(f"{filename} line {i + 1}: a text may have at most {limits.text_chars:,} characters "
                               f"(IMPORT_MAX_TEXT_CHARS); this one has {len(line):,}", field=field)
    return lines, digest


def _count_lines(n: int) -> str:
    return f"{n} line" if n == 1 else f"{n} lines"


@transaction.atomic
def corpus_import(
    *,
    name: str,
    source_file: IO[bytes],
    source_filename: str,
    reference_files: Sequence[tuple[IO[bytes], str]],
    replace: bool = False,
) -> Corpus:
    """Create the corpus ``name``: line ``i`` of the source file with line ``i`` of every reference file.

    Raises:
        Conflict: a corpus of that name exists (and ``replace`` is false).
        ServiceError: no reference file or too many (``core.budgets.REFERENCE_FILES_MAX``), files of different
            lengths, an empty source line, a file not UTF-8 or a line too long (IMPORT_MAX_TEXT_CHARS).
        TooLarge: a file over MAX_UPLOAD_BYTES or IMPORT_MAX_SOURCES lines.
    """
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ServiceError(f"corpus name {name!r}: use letters, digits, '-' and '_'", field="name")
    reference_files_check(len(reference_files))
    existing = Corpus.objects.filter(name=name).first()
    if existing is not None:
        if not replace:
            raise Conflict(f"corpus {name!r} is already imported ({existing.items.count()} sources)", field="name")
        existing.delete()
    sources, source_sha = _lines(source_file, source_filename, "source")
    files = [{"name": source_filename, "sha256": source_sha, "role": "source"}]
    columns: list[list[str]] = []
    for file, filename in reference_files:
        lines, sha = _lines(file, filename, "references")
        if len(lines) != len(sources):
            raise ServiceError(
                f"{filename}: {_count_lines(len(lines))}, but {source_filename} has {_count_lines(len(sources))} "
                "(blank lines at the end are not counted)", field="references"
            )
        columns.append(lines)
        files.append({"name": filename, "sha256": sha, "role": "references"})
    for i, source in enumerate(sources):
        if not source.strip():
            raise ServiceError(f"{source_filename} line {i + 1}: empty source sentence", field="source")
    corpus = Corpus.objects.create(name=name, files=files)
    CorpusItem.objects.bulk_create(
        [
            CorpusItem(
                corpus=corpus,
                index=i,
                source=source.strip(),
                references=[column[i].strip() for column in columns if column[i].strip()],
            )
            for i, source in enumerate(sources)
        ],
        batch_size=1000,
    )
    return corpus
