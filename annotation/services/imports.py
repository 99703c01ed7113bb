"""Importing datasets: SimpEval CSVs (with their anonymous rating slots), multi-aspect rating CSVs
(Simplicity-DA, crowd DA/Likert) and JSONL for new studies.

Every import runs in one transaction: a bad row leaves nothing behind.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Protocol

from django.conf import settings
from django.db import transaction
from django.utils.text import slugify

from annotation.formats import FormatError, read_jsonl, read_simpeval
from annotation.formats.da import DAFile, DARow, read_da
from annotation.formats.simpeval import SimpEvalRow
from annotation.models import (
    Annotation,
    AspectJudgement,
    Campaign,
    ImportBatch,
    Output,
    OutputJudgement,
    RatingUnit,
    Reference,
    Source,
    System,
    User,
)
from annotation.rules import sentence_key
from core.errors import Conflict, ServiceError, TooLarge
from core.planner import analyze_after_bulk_write


@dataclass
class ImportResult:
    batch: ImportBatch
    campaign: Campaign
    sources: int = 0
    outputs: int = 0
    units: int = 0
    ratings: int = 0
    references: int = 0
    warnings: list[str] = field(default_factory=list)
    aspect_ratings: dict[str, int] = field(default_factory=dict)  # multi-aspect files: aspect -> ratings

    def summary(self) -> str:
        aspects = ""
        if self.aspect_ratings:
            aspects = " (" + ", ".join(f"{n} {a}" for a, n in self.aspect_ratings.items()) + ")"
        text = (
            f"Imported {self.batch.filename} into campaign '{self.campaign.slug}': {self.sources} sources, "
            f"{self.outputs} outputs ({self.units} distinct texts), {self.ratings} ratings{aspects}, "
            f"{self.references} references."
        )
        return "\n".join([text, *(f"warning: {w}" for w in self.warnings)])


def text_key(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()


def _campaign_for_import(*, slug: str, name: str | None, user: User | None, ratings: int | None) -> Campaign:
    if slug != slugify(slug):
        raise ServiceError(f"campaign slug {slug!r} may only hold lowercase letters, digits and hyphens")
    campaign, created = Campaign.objects.select_for_update().get_or_create(
        slug=slug, defaults={"name": name or slug, "ratings_per_output": ratings or 3}
    )
    if created and user is not None and user.is_researcher:
        campaign.owners.add(user)
    return campaign


def _refuse_repeat(campaign: Campaign, digest: str, filename: str) -> None:
    previous = ImportBatch.objects.filter(campaign=campaign, sha256=digest).first()
    if previous is not None:
        raise Conflict(
            f"{filename} was already imported into campaign '{campaign.slug}' "
            f"(as {previous.filename} on {previous.created_at:%Y-%m-%d %H:%M}); nothing was imported again."
        )


def _get_source(campaign: Campaign, external_id: str, text: str, order: int, filename: str, line: int) -> Source:
    source, created = Source.objects.get_or_create(
        campaign=campaign, external_id=external_id, defaults={"text": text, "order": order}
    )
    if not created and source.text != text:
        raise FormatError(
            f"source {external_id!r} already exists in campaign '{campaign.slug}' with a different text",
            file=filename, line=line,
        )
    return source


def _attach_references(
    sources: list[Source], references: dict[str, list[str]] | None, result: ImportResult
) -> None:
    if references is None:
        return
    missing = 0
    rows: list[Reference] = []
    for source in sources:
        refs = references.get(sentence_key(source.text))
        if refs is None:
            missing += 1
            continue
        if source.references.exists():
            continue
        rows.extend(Reference(source=source, text=text, position=i) for i, text in enumerate(refs))
    Reference.objects.bulk_create(rows)
    result.references += len(rows)
    if missing:
        result.warnings.append(f"{missing} of {len(sources)} sources have no reference in the reference files")


def _units_for(source: Source, texts: list[str], cache: dict[tuple[int, str], RatingUnit]) -> None:
    needed = {text_key(t): t.strip() for t in texts}
    for unit in RatingUnit.objects.filter(source=source, text_key__in=list(needed)):
        cache[(source.pk, unit.text_key)] = unit
    new = [
        RatingUnit(source=source, text=t, text_key=k)
        for k, t in needed.items()
        if (source.pk, k) not in cache
    ]
    for unit in RatingUnit.objects.bulk_create(new):
        cache[(source.pk, unit.text_key)] = unit


class BinaryFile(Protocol):
    """What an import reads: an open binary file, an uploaded file, a BytesIO."""

    def read(self, size: int = -1, /) -> bytes: ...


IMPORT_KINDS = tuple(ImportBatch.Kind.values)


def _decode(content: bytes, filename: str) -> str:
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text (byte {exc.start})", file=filename) from None
    if "\x00" in text:
        # PostgreSQL refuses NUL in text and SQLite would store it: refused here, the same on both.
        before = text[: text.index("\x00")]
        raise FormatError("the file holds a NUL byte", file=filename, line=before.count("\n") + 1,
                          column=f"char {len(before) - before.rfind(chr(10))}")
    return text


def _read_capped(file: BinaryFile, filename: str, max_bytes: int) -> bytes:
    """The file's bytes, read in chunks and refused (413) as soon as they pass `max_bytes`."""
    chunks: list[bytes] = []
    size = 0
    while chunk := file.read(1 << 20):
        size += len(chunk)
        if size > max_bytes:
            raise TooLarge(f"{filename} is larger than the {max_bytes:,} bytes an import may have "
                           "(MAX_UPLOAD_BYTES); split it into several files", field="file")
        chunks.append(chunk)
    return b"".join(chunks)


def campaign_import(
    *,
    kind: str,
    file: BinaryFile,
    filename: str,
    campaign_slug: str,
    user: User | None = None,
    references: dict[str, list[str]] | None = None,
    campaign_name: str | None = None,
    analyse: bool = True,
    max_bytes: int | None = None,
) -> ImportResult:
    """Import one file into a campaign (created if needed), all or nothing.

    Args:
        kind: "jsonl" (sources, references and outputs of a new study), "simpeval" (a released
            SimpEval CSV with its ratings) or "da" (a multi-aspect rating CSV: Simplicity-DA or the
            crowd layout of SimpDA_2022 / SimpLikert_2022, see ``annotation.formats.da``).
        file: The file's bytes are read from it (UTF-8, a BOM is allowed); it is not closed.
        filename: The name shown in messages and stored with the batch.
        references: SimpEval and DA only: reference texts by source text's ``annotation.rules.sentence_key``.
        campaign_name: Name of the campaign when it is created (default: its slug).
        analyse: Queue the text analysis of the new outputs.
        max_bytes: The largest file accepted (default: settings.MAX_UPLOAD_BYTES).

    Raises:
        ServiceError: an unknown kind (field "kind") or a bad campaign slug.
        FormatError: the file does not parse (names file, line and column).
        Conflict: the same bytes were already imported into this campaign.
        TooLarge: the file has more than `max_bytes` bytes (a 413; nothing past the limit is read).
    """
    if kind not in IMPORT_KINDS:
        raise ServiceError(f"unknown import kind {kind!r} (expected one of: {', '.join(IMPORT_KINDS)})",
                           field="kind")
    content = _read_capped(file, filename, settings.MAX_UPLOAD_BYTES if max_bytes is None else max_bytes)
    text = _decode(content, filename)
    digest = hashlib.sha256(content).hexdigest()
    if kind == ImportBatch.Kind.SIMPEVAL:
        return _import_simpeval(
            text=text, filename=filename, digest=digest, campaign_slug=campaign_slug, campaign_name=campaign_name,
            user=user, references=references, analyse=analyse,
        )
    if kind == ImportBatch.Kind.DA:
        return _import_da(
            text=text, filename=filename, digest=digest, campaign_slug=campaign_slug, campaign_name=campaign_name,
            user=user, references=references, analyse=analyse,
        )
    if references is not None:
        raise ServiceError("reference files go with SimpEval and DA imports; a JSONL file holds its own references",
                           field="references")
    return _import_jsonl(
        text=text, filename=filename, digest=digest, campaign_slug=campaign_slug, campaign_name=campaign_name,
        user=user, analyse=analyse,
    )


def _import_simpeval(
    *,
    text: str,
    filename: str,
    digest: str,
    campaign_slug: str,
    campaign_name: str | None,
    user: User | None,
    references: dict[str, list[str]] | None,
    analyse: bool,
) -> ImportResult:
    """A released SimpEval CSV; its `rating_k` columns become anonymous imported rating slots."""
    parsed = read_simpeval(text.splitlines(keepends=True), name=filename)
    with transaction.atomic():
        campaign = _campaign_for_import(slug=campaign_slug, name=campaign_name, user=user,
                                        ratings=parsed.n_ratings)
        _refuse_repeat(campaign, digest, filename)
        batch = ImportBatch.objects.create(
            campaign=campaign, kind=ImportBatch.Kind.SIMPEVAL, filename=filename, sha256=digest,
            layout=parsed.layout, rows=len(parsed.rows), created_by=user,
        )
        result = ImportResult(batch=batch, campaign=campaign)
        order_base = Source.objects.filter(campaign=campaign).count()
        by_source: dict[str, list[SimpEvalRow]] = defaultdict(list)
        for row in parsed.rows:
            by_source[row.original_id].append(row)
        sources: dict[str, Source] = {}
        for i, (sid, rows) in enumerate(by_source.items()):
            sources[sid] = _get_source(campaign, sid, rows[0].original, order_base + i, filename, rows[0].line)
        systems = {s.name: s for s in System.objects.filter(campaign=campaign)}
        for name in {row.system for row in parsed.rows} - set(systems):
            systems[name] = System.objects.create(campaign=campaign, name=name)
        units: dict[tuple[int, str], RatingUnit] = {}
        existing = set(
            Output.objects.filter(source__in=sources.values()).values_list("source_id", "system__name")
        )
        outputs: list[Output] = []
        output_rows = []
        for sid, rows in by_source.items():
            source = sources[sid]
            shown = [row.processed_generation or row.generation for row in rows]
            _units_for(source, shown, units)
            for row, text_shown in zip(rows, shown, strict=True):
                if (source.pk, row.system) in existing:
                    raise FormatError(
                        f"source {sid!r} already has an output of system {row.system!r} in this campaign",
                        file=filename, line=row.line,
                    )
                output_rows.append(row)
                outputs.append(
                    Output(
                        source=source, system=systems[row.system], unit=units[(source.pk, text_key(text_shown))],
                        text=text_shown.strip(),
                        raw_text=row.generation if row.generation != text_shown.strip() else "",
                        external_id=row.row_id or "", import_batch=batch, row_index=row.line,
                        given_category=row.category or "",
                    )
                )
        outputs = Output.objects.bulk_create(outputs)
        annotations: dict[tuple[str, int], Annotation] = {}
        for sid in by_source:
            for k in range(1, parsed.n_ratings + 1):
                annotations[(sid, k)] = Annotation(
                    source=sources[sid], import_batch=batch, rater_slot=f"rating_{k}",
                    status=Annotation.Status.SUBMITTED,
                )
        Annotation.objects.bulk_create(annotations.values())
        judgements: list[OutputJudgement] = []
        for row, output in zip(output_rows, outputs, strict=True):
            for k, (rating, z) in enumerate(zip(row.ratings, row.zscores, strict=True), start=1):
                if rating is None:
                    continue
                judgements.append(
                    OutputJudgement(
                        annotation=annotations[(row.original_id, k)], output=output,
                        category=row.category or "", rating=rating, z_score=z,
                    )
                )
        OutputJudgement.objects.bulk_create(judgements, batch_size=2000)
        # Slots with no rating at all stay as empty imported annotations; drop them.
        Annotation.objects.filter(import_batch=batch, judgements__isnull=True).delete()
        _attach_references(list(sources.values()), references, result)
        result.sources = len(sources)
        result.outputs = len(outputs)
        result.units = len({o.unit_id for o in outputs})
        result.ratings = len(judgements)
        empty = [f"line {o.row_index}" for o in outputs if not o.text]
        if empty:
            result.warnings.append(f"{len(empty)} empty output(s), kept as rated: {', '.join(empty[:10])}")
        if analyse:
            from annotation.services.queue import campaign_schedule_analysis

            campaign_schedule_analysis(campaign=campaign)
    return result


def _import_jsonl(
    *,
    text: str,
    filename: str,
    digest: str,
    campaign_slug: str,
    campaign_name: str | None,
    user: User | None,
    analyse: bool,
) -> ImportResult:
    """Sources, references and system outputs for a new study (no ratings)."""
    parsed = read_jsonl(text.splitlines(), name=filename)
    with transaction.atomic():
        campaign = _campaign_for_import(slug=campaign_slug, name=campaign_name, user=user, ratings=None)
        _refuse_repeat(campaign, digest, filename)
        batch = ImportBatch.objects.create(
            campaign=campaign, kind=ImportBatch.Kind.JSONL, filename=filename, sha256=digest,
            rows=len(parsed), created_by=user,
        )
        result = ImportResult(batch=batch, campaign=campaign)
        order_base = Source.objects.filter(campaign=campaign).count()
        systems = {s.name: s for s in System.objects.filter(campaign=campaign)}
        units: dict[tuple[int, str], RatingUnit] = {}
        outputs: list[Output] = []
        for i, item in enumerate(parsed):
            if Source.objects.filter(campaign=campaign, external_id=item.id).exists():
                raise FormatError(f"source id {item.id!r} already exists in campaign '{campaign.slug}'",
                                  file=filename, line=item.line, column="id")
            source = Source.objects.create(campaign=campaign, external_id=item.id, text=item.source,
                                           order=order_base + i)
            Reference.objects.bulk_create(
                Reference(source=source, text=r, position=j) for j, r in enumerate(item.references)
            )
            result.references += len(item.references)
            _units_for(source, [t for _, t in item.outputs], units)
            for system_name, output_text in item.outputs:
                if system_name not in systems:
                    systems[system_name] = System.objects.create(campaign=campaign, name=system_name)
                outputs.append(
                    Output(source=source, system=systems[system_name],
                           unit=units[(source.pk, text_key(output_text))], text=output_text.strip(),
                           raw_text=output_text if output_text != output_text.strip() else "",
                           import_batch=batch, row_index=len(outputs))
                )
            result.sources += 1
        analyze_after_bulk_write(Source, result.sources)
        Output.objects.bulk_create(outputs)
        result.outputs = len(outputs)
        result.units = len({o.unit_id for o in outputs})
        from annotation.services.assignments import campaign_ensure_slots

        campaign_ensure_slots(campaign=campaign)
        if analyse:
            from annotation.services.queue import campaign_schedule_analysis

            campaign_schedule_analysis(campaign=campaign)
    return result


# --- Multi-aspect rating files -----------------------------------------------------------------------------

AGGREGATE_RATER = "aggregate"  # Simplicity-DA's ratings are already averaged over its raters
_SLOT_LENGTH = Annotation._meta.get_field("rater_slot").max_length or 32


def _da_rater_slot(rater: str) -> str:
    """A crowd worker's anonymous slot (``worker_<WorkerId>``); over-long ids are shortened by hash."""
    if not rater:
        return AGGREGATE_RATER
    slot = f"worker_{rater}"
    if len(slot) > _SLOT_LENGTH:
        slot = "worker_#" + hashlib.sha256(rater.encode("utf-8")).hexdigest()[: _SLOT_LENGTH - 8]
    return slot


def _da_source_text(parsed: DAFile, source_id: str, references: dict[str, list[str]] | None) -> tuple[str, int]:
    """The text (and its first line) a source is stored with when the file gives it several.

    The crowd files carry one source with two versions of its original; the one the reference files know
    wins (it is the one SimpEval_2022 has), else the first in the file.
    """
    texts = parsed.source_texts[source_id]
    chosen = texts[0]
    if len(texts) > 1 and references is not None:
        chosen = next((t for t in texts if sentence_key(t.text) in references), chosen)
    return chosen.text, chosen.line


def _check_aspect_scales(campaign: Campaign, parsed: DAFile) -> None:
    """An aspect keeps one scale within a campaign, so its raw means stay comparable."""
    known = dict(
        AspectJudgement.objects.filter(annotation__source__campaign=campaign)
        .values_list("aspect", "scale")
        .distinct()
    )
    for aspect in parsed.aspects:
        if aspect.name in known and known[aspect.name] != aspect.scale:
            raise FormatError(
                f"aspect {aspect.name!r} is rated on {known[aspect.name]} in campaign '{campaign.slug}'; "
                f"this file rates it on {aspect.scale}",
                file=parsed.name, line=1, column=aspect.column,
            )


def _import_da(
    *,
    text: str,
    filename: str,
    digest: str,
    campaign_slug: str,
    campaign_name: str | None,
    user: User | None,
    references: dict[str, list[str]] | None,
    analyse: bool,
) -> ImportResult:
    """A multi-aspect rating CSV. Sources, systems, units and outputs as for SimpEval; each rating becomes
    an `AspectJudgement` of an imported rater slot (a crowd worker, or Simplicity-DA's aggregate)."""
    parsed = read_da(text.splitlines(keepends=True), name=filename)
    with transaction.atomic():
        campaign = _campaign_for_import(slug=campaign_slug, name=campaign_name, user=user,
                                        ratings=parsed.max_raters_per_output)
        _refuse_repeat(campaign, digest, filename)
        _check_aspect_scales(campaign, parsed)
        batch = ImportBatch.objects.create(
            campaign=campaign, kind=ImportBatch.Kind.DA, filename=filename, sha256=digest,
            layout=parsed.layout_facts(), rows=len(parsed.rows), created_by=user,
        )
        result = ImportResult(batch=batch, campaign=campaign, warnings=list(parsed.warnings))
        order_base = Source.objects.filter(campaign=campaign).count()
        by_output: dict[tuple[str, str], list[DARow]] = defaultdict(list)
        for row in parsed.rows:
            by_output[(row.source_id, row.system)].append(row)
        sources: dict[str, Source] = {}
        for i, sid in enumerate(parsed.source_texts):
            source_text, line = _da_source_text(parsed, sid, references)
            sources[sid] = _get_source(campaign, sid, source_text, order_base + i, filename, line)
        for sid, texts in parsed.ambiguous_sources().items():
            seen = ", ".join(f"line {t.line} ({t.rows} rows)" for t in texts)
            result.warnings.append(
                f"source {sid!r} has {len(texts)} different original texts ({seen}); "
                f"kept the one of line {_da_source_text(parsed, sid, references)[1]}"
            )
        systems = {s.name: s for s in System.objects.filter(campaign=campaign)}
        for name in {row.system for row in parsed.rows} - set(systems):
            systems[name] = System.objects.create(campaign=campaign, name=name)
        existing = set(
            Output.objects.filter(source__in=sources.values()).values_list("source_id", "system__name")
        )
        texts_of: dict[str, list[str]] = defaultdict(list)
        for (sid, _), rows in by_output.items():
            texts_of[sid].append(rows[0].output)
        units: dict[tuple[int, str], RatingUnit] = {}
        for sid, source in sources.items():
            _units_for(source, texts_of[sid], units)
        outputs: list[Output] = []
        for (sid, system), rows in by_output.items():
            source, first = sources[sid], rows[0]
            if (source.pk, system) in existing:
                raise FormatError(
                    f"source {sid!r} already has an output of system {system!r} in this campaign",
                    file=filename, line=first.line,
                )
            outputs.append(
                Output(
                    source=source, system=systems[system], unit=units[(source.pk, text_key(first.output))],
                    text=first.output.strip(), raw_text=first.output if first.output != first.output.strip() else "",
                    import_batch=batch, row_index=first.line,
                )
            )
        outputs = Output.objects.bulk_create(outputs)
        output_of = {key: output for key, output in zip(by_output, outputs, strict=True)}
        annotations: dict[tuple[str, str], Annotation] = {}
        for row in parsed.rows:
            if (row.source_id, row.rater) not in annotations and row.ratings:
                annotations[(row.source_id, row.rater)] = Annotation(
                    source=sources[row.source_id], import_batch=batch, rater_slot=_da_rater_slot(row.rater),
                    status=Annotation.Status.SUBMITTED,
                )
        Annotation.objects.bulk_create(annotations.values())
        scale = {a.name: a.scale for a in parsed.aspects}
        judgements: list[AspectJudgement] = []
        counts: dict[str, int] = dict.fromkeys(scale, 0)
        for row in parsed.rows:
            for aspect, raw in row.ratings.items():
                judgements.append(
                    AspectJudgement(
                        annotation=annotations[(row.source_id, row.rater)],
                        output=output_of[(row.source_id, row.system)], aspect=aspect, raw=raw,
                        z=row.zscores.get(aspect), scale=scale[aspect],
                    )
                )
                counts[aspect] += 1
        AspectJudgement.objects.bulk_create(judgements, batch_size=2000)
        _attach_references(list(sources.values()), references, result)
        result.sources = len(sources)
        result.outputs = len(outputs)
        result.units = len({o.unit_id for o in outputs})
        result.ratings = sum(1 for row in parsed.rows if row.ratings)
        result.aspect_ratings = counts
        if analyse:
            from annotation.services.queue import campaign_schedule_analysis

            campaign_schedule_analysis(campaign=campaign)
    return result
