"""Named corpora without ratings (ASSET validation...), imported once from line-aligned text files."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import IO

from django.db import transaction

from annotation.models import Corpus, CorpusItem
from core.errors import Conflict, ServiceError


def _lines(file: IO[bytes], filename: str) -> tuple[list[str], str]:
    data = file.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ServiceError(f"{filename}: not UTF-8 text (byte {exc.start})", field="file") from None
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return lines, hashlib.sha256(data).hexdigest()


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
        ServiceError: no reference file, files of different lengths, an empty source line.
    """
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ServiceError(f"corpus name {name!r}: use letters, digits, '-' and '_'", field="name")
    if not reference_files:
        raise ServiceError("give at least one reference file (SIMP...)", field="references")
    existing = Corpus.objects.filter(name=name).first()
    if existing is not None:
        if not replace:
            raise Conflict(f"corpus {name!r} is already imported ({existing.items.count()} sources)", field="name")
        existing.delete()
    sources, source_sha = _lines(source_file, source_filename)
    files = [{"name": source_filename, "sha256": source_sha, "role": "source"}]
    columns: list[list[str]] = []
    for file, filename in reference_files:
        lines, sha = _lines(file, filename)
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
