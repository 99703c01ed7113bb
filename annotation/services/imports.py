"""Importing datasets: SimpEval CSVs (with their anonymous rating slots), multi-aspect rating CSVs
(Simplicity-DA, crowd DA/Likert) and JSONL for new studies.

An import never holds the database for long, so that annotators' autosaves and other writers go on beside
it (on SQLite there is one writer at a time). The file is read, parsed and checked against the campaign
before anything is written; the rows are then written in bulk, in short transactions of at most
``IMPORT_ROWS_PER_WRITE`` rows each. Until the last of them is written the batch is marked incomplete
(``ImportBatch.complete``): no slot is made for its sources, so no annotator can be given them, and a second
import into the campaign is refused. If any write fails, what was written is deleted again (the same
short steps), so a failed import leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from annotation.formats import FormatError, read_jsonl, read_simpeval
from annotation.formats.da import DAFile, DARow, read_da
from annotation.formats.references import parse_references
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
    Slot,
    Source,
    System,
    User,
)
from annotation.rules import sentence_key
from core.budgets import reference_files_check
from core.errors import Conflict, ServiceError, TooLarge
from core.planner import analyze_after_bulk_write

logger = logging.getLogger(__name__)
T = TypeVar("T")
# The longest sleep of SQLite's busy handler between two tries for the lock (sqliteDefaultBusyCallback).
SQLITE_STEP_PAUSE_SECONDS = 0.1


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
    writes: int = 0  # write transactions the import used
    longest_write_seconds: float = 0.0  # the longest of them, from BEGIN to COMMIT

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


# --- Limits ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportLimits:
    """What one import may hold besides its bytes (MAX_UPLOAD_BYTES); from settings, each with an env override."""

    text_chars: int  # IMPORT_MAX_TEXT_CHARS: one source, reference or output text
    sources: int  # IMPORT_MAX_SOURCES
    outputs: int  # IMPORT_MAX_OUTPUTS


def import_limits() -> ImportLimits:
    return ImportLimits(text_chars=settings.IMPORT_MAX_TEXT_CHARS, sources=settings.IMPORT_MAX_SOURCES,
                        outputs=settings.IMPORT_MAX_OUTPUTS)


def check_import_limits(*, filename: str, sources: int, outputs: int,
                        texts: Iterable[tuple[int, str, str]]) -> None:
    """Refuse a parsed file over `import_limits()`: too many sources or outputs (413, field "file"), or a text
    (given as line, column, text) longer than a text may be (400 naming its line and column)."""
    limits = import_limits()
    for what, count, limit, setting in (("sources", sources, limits.sources, "IMPORT_MAX_SOURCES"),
                                        ("outputs", outputs, limits.outputs, "IMPORT_MAX_OUTPUTS")):
        if count > limit:
            raise TooLarge(f"{filename} holds {count:,} {what}; one import may hold at most {limit:,} "
                           f"({setting}); split it into several files", field="file")
    for line, column, text in texts:
        if len(text) > limits.text_chars:
            raise FormatError(f"a text may have at most {limits.text_chars:,} characters (IMPORT_MAX_TEXT_CHARS); "
                              f"this one has {len(text):,}", file=filename, line=line, column=column)


# --- Writing in short steps --------------------------------------------------------------------------------


def _parts(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _steps(items: Sequence[T], rows: Callable[[T], int]) -> Iterator[list[T]]:
    """`items` in consecutive groups of about IMPORT_ROWS_PER_WRITE rows each (`rows` counts an item's)."""
    budget = max(1, settings.IMPORT_ROWS_PER_WRITE)
    group: list[T] = []
    used = 0
    for item in items:
        group.append(item)
        used += rows(item)
        if used >= budget:
            yield group
            group, used = [], 0
    if group:
        yield group


class ImportTakenOver(Conflict):
    """This import's batch was taken over by the clean-up of abandoned imports (it had stopped beating for
    longer than IMPORT_STALE_SECONDS); the clean-up removes its rows, so the import stops writing."""


class _Heartbeat:
    """The heartbeat of one batch, held by the import writing it or by the clean-up removing it.

    Each beat (inside a write step) moves ``heartbeat_at`` on from the value this holder wrote last; if the
    batch no longer has that value, someone else took it over (or it is gone), and the holder stops.
    """

    def __init__(self, batch: ImportBatch, at: datetime) -> None:
        self.batch, self.at = batch, at

    def __call__(self, *, done: bool = False) -> None:
        now = None if done else timezone.now()
        if not ImportBatch.objects.filter(pk=self.batch.pk, heartbeat_at=self.at).update(heartbeat_at=now):
            raise ImportTakenOver(
                f"the import of {self.batch.filename} was taken for abandoned (no write step for "
                f"{settings.IMPORT_STALE_SECONDS} s, IMPORT_STALE_SECONDS) and is being removed; import it again",
                field="file")
        self.at = now  # type: ignore[assignment]

    @contextmanager
    def step(self, *, done: bool = False) -> Iterator[None]:
        """A transaction that beats first; if it rolls back, so does the value this holder expects."""
        before = self.at
        try:
            with transaction.atomic():
                self(done=done)
                yield
        except BaseException:
            self.at = before
            raise


class _Writes:
    """One import's writes: each step its own short transaction that beats the batch's heartbeat; every row
    it creates names the batch, so a failed (or killed) import can be removed."""

    def __init__(self, campaign: Campaign, batch: ImportBatch, campaign_created: bool, result: ImportResult) -> None:
        self.campaign, self.batch, self.campaign_created, self.result = campaign, batch, campaign_created, result
        assert batch.heartbeat_at is not None
        self.beat = _Heartbeat(batch, batch.heartbeat_at)
        self.source_ids: list[int] = []

    @contextmanager
    def step(self, *, done: bool = False) -> Iterator[None]:
        started = time.perf_counter()
        with self.beat.step(done=done):
            yield
        self.result.writes += 1
        self.result.longest_write_seconds = max(self.result.longest_write_seconds, time.perf_counter() - started)
        if connection.vendor == "sqlite" and not connection.in_atomic_block:
            # SQLite hands its write lock to no queue: a waiting writer polls (every 100 ms at most once it
            # has waited a while) and would miss a lock taken again at once. A pause as long lets it in.
            time.sleep(SQLITE_STEP_PAUSE_SECONDS)

    def systems(self, names: Iterable[str]) -> dict[str, System]:
        """The campaign's systems by name, the missing ones among `names` created."""
        systems = {s.name: s for s in System.objects.filter(campaign=self.campaign)}
        missing = list(dict.fromkeys(n for n in names if n not in systems))
        if missing:
            with self.step():
                made = System.objects.bulk_create(System(campaign=self.campaign, name=n, import_batch=self.batch)
                                                  for n in missing)
            systems.update((s.name, s) for s in made)
        return systems

    def new_sources(self, sources: list[Source]) -> list[Source]:
        for source in sources:
            source.import_batch = self.batch
        made = Source.objects.bulk_create(sources)
        self.source_ids.extend(s.pk for s in made)
        return made

    def new_units(self, units: list[RatingUnit]) -> list[RatingUnit]:
        for unit in units:
            unit.import_batch = self.batch
        return RatingUnit.objects.bulk_create(units)

    def finish(self, *, analyse: bool) -> ImportResult:
        """Mark the batch complete; then (JSONL) give the new sources their slots, so work can be handed out."""
        with self.step():
            ImportBatch.objects.filter(pk=self.batch.pk).update(complete=True)
        self.batch.complete = True
        made_slots = _make_slots(self.campaign, self.batch, self.source_ids, self.step)
        # The statistics of the tables once, after all steps (each step alone is below core.planner.BULK_ROWS).
        for model, rows in ((Source, len(self.source_ids)), (Slot, made_slots)):
            analyze_after_bulk_write(model, rows)
        with self.step(done=True):  # the import is done: its heartbeat is cleared
            if analyse:
                from annotation.services.queue import campaign_schedule_analysis

                campaign_schedule_analysis(campaign=self.campaign)
        self.batch.heartbeat_at = None
        return self.result

    def undo(self, error: BaseException) -> None:
        """Delete what this import wrote, in short steps (a compensating write: its steps were committed)."""
        if isinstance(error, ImportTakenOver):
            return  # the clean-up that took the batch over removes it
        try:
            _remove_batch(self.batch, self.beat, delete_campaign=self.campaign_created)
        except Exception:  # the import's own error is the one to report; this one is logged
            logger.exception("could not delete the rows of failed import %s (batch %s)", self.batch.filename,
                             self.batch.pk)


def _make_slots(campaign: Campaign, batch: ImportBatch, source_ids: Sequence[int],
                step: Callable[[], AbstractContextManager[None]]) -> int:
    """The slots of a JSONL batch's new sources, in steps (the other kinds import ratings, not work)."""
    if batch.kind != ImportBatch.Kind.JSONL:
        return 0
    from annotation.services.assignments import campaign_ensure_slots

    made = 0
    size = max(1, settings.IMPORT_ROWS_PER_WRITE // max(1, campaign.ratings_per_output))
    for part in _parts(source_ids, size):
        with step():
            made += campaign_ensure_slots(campaign=campaign, source_ids=part, statistics=False)
    if made and campaign.allocation == Campaign.Allocation.ADAPTIVE:
        from annotation.services.allocation import campaign_allocation_refresh

        campaign_allocation_refresh(campaign=campaign)
    return made


def _remove_batch(batch: ImportBatch, beat: _Heartbeat, *, delete_campaign: bool = False) -> int:
    """Delete every row the import of `batch` wrote (found by their ``import_batch``), then the batch (or its
    campaign, when the import created it), in short transactions each beating `beat`; returns how many
    sources went."""
    removed = 0
    for model in (Annotation, Output, RatingUnit, Source, System):
        ids = list(model._default_manager.filter(import_batch_id=batch.pk).values_list("pk", flat=True))
        for part in _parts(ids, 500):
            with beat.step():
                model._default_manager.filter(pk__in=part).delete()
        if model is Source:
            removed = len(ids)
    with beat.step(done=True):
        if delete_campaign:
            Campaign.objects.filter(pk=batch.campaign_id).delete()
        else:
            ImportBatch.objects.filter(pk=batch.pk).delete()
    return removed


# --- Imports that were killed --------------------------------------------------------------------------------


def import_stale_after() -> timedelta:
    """How long an unfinished import may go without a write step before it counts as killed."""
    return timedelta(seconds=max(1, settings.IMPORT_STALE_SECONDS))


def _stale(now: datetime) -> Q:
    """Batches still being written (or given their slots) whose last write step is older than allowed; an
    unfinished batch that never beat counts from its creation."""
    cutoff = now - import_stale_after()
    return Q(heartbeat_at__lt=cutoff) | Q(complete=False, heartbeat_at__isnull=True, created_at__lt=cutoff)


def imports_clean_up(*, campaign_slug: str | None = None, now: datetime | None = None) -> list[str]:
    """Finish off the imports that were killed partway (daphne restarted, the process killed): an unfinished
    batch's rows are removed, and a complete JSONL batch whose slots were being made gets the rest of them.

    Run by the next import into the campaign, by every worker's job reaper and by ``manage.py
    import_cleanup``; safe to run from several at once (each batch is taken over by one of them). Returns a
    line for each batch handled.
    """
    now = now or timezone.now()
    batches = ImportBatch.objects.filter(_stale(now)).select_related("campaign").order_by("pk")
    if campaign_slug is not None:
        batches = batches.filter(campaign__slug=campaign_slug)
    done: list[str] = []
    for batch in batches[:100]:
        last = batch.heartbeat_at or batch.created_at
        # Take the batch over: only one caller moves its heartbeat on from the stale value it read.
        if not ImportBatch.objects.filter(pk=batch.pk, heartbeat_at=batch.heartbeat_at).update(heartbeat_at=now):
            continue
        beat = _Heartbeat(batch, now)
        where = (f"{batch.filename} into campaign '{batch.campaign.slug}' (started {batch.created_at:%Y-%m-%d %H:%M:%S}"
                 f" UTC, last write {last:%Y-%m-%d %H:%M:%S} UTC)")
        try:
            if batch.complete:
                sources = list(Source.objects.filter(import_batch=batch).values_list("pk", flat=True))
                slots = _make_slots(batch.campaign, batch, sources, beat.step)
                with beat.step(done=True):
                    pass
                done.append(f"finished the import of {where}: made the {slots} missing slots")
            else:
                removed = _remove_batch(batch, beat)
                done.append(f"removed the abandoned import of {where}: {removed} sources and what they held")
        except ImportTakenOver:
            continue
        logger.warning("import clean-up: %s", done[-1])
    return done


def imports_reap() -> int:
    """The job reaper's hook (core.services.reap_hook_register): how many killed imports it finished off."""
    return len(imports_clean_up())


def _begin(*, slug: str, name: str | None, user: User | None, ratings: int | None, digest: str, filename: str,
           **batch: Any) -> _Writes:
    """The campaign (created if needed) and its new, incomplete batch, in one short transaction; an import
    into the campaign that was killed partway is removed first."""
    if slug != slugify(slug):
        raise ServiceError(f"campaign slug {slug!r} may only hold lowercase letters, digits and hyphens")
    imports_clean_up(campaign_slug=slug)
    started = time.perf_counter()
    with transaction.atomic():
        campaign, created = Campaign.objects.select_for_update().get_or_create(
            slug=slug, defaults={"name": name or slug, "ratings_per_output": ratings or 3}
        )
        if created and user is not None and user.is_researcher:
            campaign.owners.add(user)
        _refuse_repeat(campaign, digest, filename)
        running = ImportBatch.objects.filter(campaign=campaign, complete=False).first()
        if running is not None:
            now = timezone.now()
            last = running.heartbeat_at or running.created_at
            raise Conflict(f"{running.filename} is being imported into campaign '{campaign.slug}' (started "
                           f"{running.created_at:%Y-%m-%d %H:%M:%S} UTC, still writing: its last write step was "
                           f"{max(0, int((now - last).total_seconds()))} s ago); import {filename} when it is done",
                           field="file")
        record = ImportBatch.objects.create(campaign=campaign, filename=filename, sha256=digest, created_by=user,
                                            complete=False, heartbeat_at=timezone.now(), **batch)
    result = ImportResult(batch=record, campaign=campaign, writes=1,
                          longest_write_seconds=time.perf_counter() - started)
    return _Writes(campaign, record, created, result)


def _refuse_repeat(campaign: Campaign, digest: str, filename: str) -> None:
    previous = ImportBatch.objects.filter(campaign=campaign, sha256=digest).first()
    if previous is not None:
        raise Conflict(
            f"{filename} was already imported into campaign '{campaign.slug}' "
            f"(as {previous.filename} on {previous.created_at:%Y-%m-%d %H:%M}); nothing was imported again."
        )


def _existing_sources(campaign: Campaign, ids: Iterable[str]) -> dict[str, Source]:
    found: dict[str, Source] = {}
    for part in _parts(list(ids), 500):
        found.update((s.external_id, s) for s in Source.objects.filter(campaign=campaign, external_id__in=part))
    return found


def _existing_units(source_ids: list[int]) -> dict[tuple[int, str], RatingUnit]:
    units: dict[tuple[int, str], RatingUnit] = {}
    for part in _parts(source_ids, 500):
        units.update(((u.source_id, u.text_key), u) for u in RatingUnit.objects.filter(source_id__in=part))
    return units


def _existing_outputs(source_ids: list[int]) -> set[tuple[int, str]]:
    pairs: set[tuple[int, str]] = set()
    for part in _parts(source_ids, 500):
        pairs.update(Output.objects.filter(source_id__in=part).values_list("source_id", "system__name"))
    return pairs


def _with_references(source_ids: list[int]) -> set[int]:
    have: set[int] = set()
    for part in _parts(source_ids, 500):
        have.update(Reference.objects.filter(source_id__in=part).values_list("source_id", flat=True))
    return have


def _units_for(pairs: Iterable[tuple[Source, Iterable[str]]], units: dict[tuple[int, str], RatingUnit],
               writes: _Writes) -> None:
    """Add to `units` the rating units of the texts of each source, creating those it lacks (one bulk write,
    inside a step)."""
    new: dict[tuple[int, str], RatingUnit] = {}
    for source, texts in pairs:
        for text in texts:
            key = (source.pk, text_key(text))
            if key not in units and key not in new:
                new[key] = RatingUnit(source=source, text=text.strip(), text_key=key[1])
    for unit in writes.new_units(list(new.values())):
        units[(unit.source_id, unit.text_key)] = unit


def _reference_rows(sources: Iterable[Source], references: dict[str, list[str]], have: set[int]) -> tuple[
        list[Reference], int]:
    """The references to add to `sources` (those without any yet) and how many sources have none to add."""
    rows: list[Reference] = []
    missing = 0
    for source in sources:
        refs = references.get(sentence_key(source.text))
        if refs is None:
            missing += 1
        elif source.pk not in have:
            rows.extend(Reference(source=source, text=text, position=i) for i, text in enumerate(refs))
    return rows, missing


def _references_write(sources: Iterable[Source], references: dict[str, list[str]], have: set[int],
                      result: ImportResult) -> int:
    """Write the references `sources` lack (counted in `result`); how many sources have none to add."""
    refs, missing = _reference_rows(sources, references, have)
    Reference.objects.bulk_create(refs)
    result.references += len(refs)
    return missing


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


def upload_text(file: BinaryFile, filename: str, *, field: str = "file", max_bytes: int | None = None) -> tuple[
        str, str]:
    """An uploaded or opened text file as every import reads it: at most `max_bytes` (MAX_UPLOAD_BYTES; a 413
    on `field` as soon as it is passed), UTF-8 with no NUL byte (a FormatError naming the file); returns the
    text and the SHA-256 of its bytes."""
    try:
        content = _read_capped(file, filename, settings.MAX_UPLOAD_BYTES if max_bytes is None else max_bytes)
    except TooLarge as exc:
        raise TooLarge(exc.message, field=field) from None
    return _decode(content, filename), hashlib.sha256(content).hexdigest()


REFERENCES_IN_JSONL = ("a JSONL file holds its own references (its \"references\" key); reference files go "
                       "with SimpEval and multi-aspect (DA) CSVs")


def import_references_check(*, kind: str, source_given: bool, files_given: bool) -> None:
    """The one rule for reference files given with an import (the import page, the API, the service): none at
    all, or, for a SimpEval or DA import, a file of source sentences and at least one reference file.

    Raises:
        ServiceError: naming ``references`` or ``reference_source``.
    """
    if not source_given and not files_given:
        return
    if kind == ImportBatch.Kind.JSONL:
        raise ServiceError(REFERENCES_IN_JSONL, field="references")
    if not source_given:
        raise ServiceError("give the file of source sentences the references are aligned with",
                           field="reference_source")
    if not files_given:
        raise ServiceError("give at least one reference file, line-aligned with the reference sources",
                           field="references")


def references_read(*, source: tuple[BinaryFile, str], files: Sequence[tuple[BinaryFile, str]],
                    max_bytes: int | None = None) -> dict[str, list[str]]:
    """Reference files as every interface reads them (the import page, the API, ``--references SRC DST...``):
    a file of source sentences and line-aligned files of references (tab-separated on a line), mapped by the
    source text's ``annotation.rules.sentence_key`` for `campaign_import`.

    Bounded like an import: at most ``core.budgets.REFERENCE_FILES_MAX`` reference files, each file at most
    `max_bytes` (MAX_UPLOAD_BYTES) and ``IMPORT_MAX_SOURCES`` lines, each text at most ``IMPORT_MAX_TEXT_CHARS``.

    Raises:
        ServiceError: no reference file or too many (field "references").
        TooLarge: a file over the byte or line limit (413).
        FormatError: not UTF-8, not line-aligned or a text too long (names file, line and column).
    """
    reference_files_check(len(files))
    limit = settings.MAX_UPLOAD_BYTES if max_bytes is None else max_bytes
    limits = import_limits()

    def lines(file: BinaryFile, name: str, field: str) -> list[str]:
        read = upload_text(file, name, field=field, max_bytes=limit)[0].splitlines()
        if len(read) > limits.sources:
            raise TooLarge(f"{name} has {len(read):,} lines; a reference file may have at most {limits.sources:,} "
                           "(IMPORT_MAX_SOURCES)", field=field)
        return read

    src_lines = lines(*source, "reference_source")
    return parse_references(source[1], src_lines, [(name, lines(file, name, "references")) for file, name in files],
                            max_chars=limits.text_chars)


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
    import_references_check(kind=kind, source_given=references is not None, files_given=references is not None)
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
    by_source: dict[str, list[SimpEvalRow]] = defaultdict(list)
    for row in parsed.rows:
        by_source[row.original_id].append(row)
    check_import_limits(
        filename=filename, sources=len(by_source), outputs=len(parsed.rows),
        texts=((row.line, column, value) for row in parsed.rows
               for column, value in (("original", row.original), ("generation", row.generation),
                                     ("processed_generation", row.processed_generation or ""))),
    )
    writes = _begin(slug=campaign_slug, name=campaign_name, user=user, ratings=parsed.n_ratings, digest=digest,
                    filename=filename, kind=ImportBatch.Kind.SIMPEVAL, layout=parsed.layout, rows=len(parsed.rows))
    try:
        _write_simpeval(writes, parsed.n_ratings, by_source, references, filename)
        return writes.finish(analyse=analyse)
    except BaseException as exc:
        writes.undo(exc)
        raise


def _write_simpeval(writes: _Writes, n_ratings: int, by_source: dict[str, list[SimpEvalRow]],
                    references: dict[str, list[str]] | None, filename: str) -> None:
    campaign, batch, result = writes.campaign, writes.batch, writes.result
    existing = _existing_sources(campaign, by_source)
    for sid, source in existing.items():
        if source.text != by_source[sid][0].original:
            raise FormatError(f"source {sid!r} already exists in campaign '{campaign.slug}' with a different text",
                              file=filename, line=by_source[sid][0].line)
    taken = _existing_outputs([s.pk for s in existing.values()])
    for sid, rows in by_source.items():
        for row in rows:
            if sid in existing and (existing[sid].pk, row.system) in taken:
                raise FormatError(f"source {sid!r} already has an output of system {row.system!r} in this campaign",
                                  file=filename, line=row.line)
    units = _existing_units([s.pk for s in existing.values()])
    have_refs = _with_references([s.pk for s in existing.values()])
    systems = writes.systems(row.system for row in _rows_of(by_source))
    order_base = Source.objects.filter(campaign=campaign).count()
    orders = {sid: order_base + i for i, sid in enumerate(by_source)}
    missing_refs = 0
    empty: list[str] = []
    for step in _steps(list(by_source), lambda sid: 2 + 2 * len(by_source[sid]) * (1 + n_ratings)):
        with writes.step():
            new = writes.new_sources([Source(campaign=campaign, external_id=sid, text=by_source[sid][0].original,
                                             order=orders[sid]) for sid in step if sid not in existing])
            sources = {**{s.external_id: s for s in new}, **{sid: existing[sid] for sid in step if sid in existing}}
            outputs: list[Output] = []
            output_rows: list[SimpEvalRow] = []
            shown = {sid: [row.processed_generation or row.generation for row in by_source[sid]] for sid in step}
            _units_for(((sources[sid], shown[sid]) for sid in step), units, writes)
            for sid in step:
                source, rows = sources[sid], by_source[sid]
                for row, text_shown in zip(rows, shown[sid], strict=True):
                    output_rows.append(row)
                    outputs.append(Output(
                        source=source, system=systems[row.system], unit=units[(source.pk, text_key(text_shown))],
                        text=text_shown.strip(),
                        raw_text=row.generation if row.generation != text_shown.strip() else "",
                        external_id=row.row_id or "", import_batch=batch, row_index=row.line,
                        given_category=row.category or "",
                    ))
            outputs = Output.objects.bulk_create(outputs)
            # One imported annotation per source and rating column that holds a rating.
            annotations: dict[tuple[str, int], Annotation] = {
                (sid, k): Annotation(source=sources[sid], import_batch=batch, rater_slot=f"rating_{k}",
                                     status=Annotation.Status.SUBMITTED)
                for sid in step for k in range(1, n_ratings + 1)
                if any(row.ratings[k - 1] is not None for row in by_source[sid])
            }
            Annotation.objects.bulk_create(annotations.values())
            judgements = [
                OutputJudgement(annotation=annotations[(row.original_id, k)], output=output,
                                category=row.category or "", rating=rating, z_score=z)
                for row, output in zip(output_rows, outputs, strict=True)
                for k, (rating, z) in enumerate(zip(row.ratings, row.zscores, strict=True), start=1)
                if rating is not None
            ]
            OutputJudgement.objects.bulk_create(judgements)
            if references is not None:
                missing_refs += _references_write(sources.values(), references, have_refs, result)
        result.outputs += len(outputs)
        result.units += len({o.unit_id for o in outputs})
        result.ratings += len(judgements)
        empty.extend(f"line {o.row_index}" for o in outputs if not o.text)
    result.sources = len(by_source)
    if missing_refs:
        result.warnings.append(f"{missing_refs} of {len(by_source)} sources have no reference in the reference files")
    if empty:
        result.warnings.append(f"{len(empty)} empty output(s), kept as rated: {', '.join(empty[:10])}")


def _rows_of(by_source: dict[str, list[SimpEvalRow]]) -> Iterator[SimpEvalRow]:
    for rows in by_source.values():
        yield from rows


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
    check_import_limits(
        filename=filename, sources=len(parsed), outputs=sum(len(item.outputs) for item in parsed),
        texts=((item.line, column, value) for item in parsed
               for column, value in (("source", item.source),
                                     *((f"references[{j}]", r) for j, r in enumerate(item.references)),
                                     *((f"outputs[{j}].text", t) for j, (_, t) in enumerate(item.outputs)))),
    )
    writes = _begin(slug=campaign_slug, name=campaign_name, user=user, ratings=None, digest=digest, filename=filename,
                    kind=ImportBatch.Kind.JSONL, rows=len(parsed))
    try:
        campaign, result = writes.campaign, writes.result
        taken = _existing_sources(campaign, (item.id for item in parsed))
        for item in parsed:
            if item.id in taken:
                raise FormatError(f"source id {item.id!r} already exists in campaign '{campaign.slug}'",
                                  file=filename, line=item.line, column="id")
        systems = writes.systems(name for item in parsed for name, _ in item.outputs)
        order_base = Source.objects.filter(campaign=campaign).count()
        row_index = 0
        def rows(pair: tuple[int, Any]) -> int:
            return 1 + len(pair[1].references) + 2 * len(pair[1].outputs)

        for step in _steps(list(enumerate(parsed)), rows):
            with writes.step():
                sources = writes.new_sources([Source(campaign=campaign, external_id=item.id, text=item.source,
                                                     order=order_base + i) for i, item in step])
                refs = [Reference(source=source, text=r, position=j)
                        for source, (_, item) in zip(sources, step, strict=True) for j, r in enumerate(item.references)]
                Reference.objects.bulk_create(refs)
                units: dict[tuple[int, str], RatingUnit] = {}
                _units_for(((source, [t for _, t in item.outputs]) for source, (_, item) in zip(sources, step,
                                                                                              strict=True)),
                           units, writes)
                outputs: list[Output] = []
                for source, (_, item) in zip(sources, step, strict=True):
                    for system_name, output_text in item.outputs:
                        outputs.append(Output(
                            source=source, system=systems[system_name],
                            unit=units[(source.pk, text_key(output_text))], text=output_text.strip(),
                            raw_text=output_text if output_text != output_text.strip() else "",
                            import_batch=writes.batch, row_index=row_index,
                        ))
                        row_index += 1
                Output.objects.bulk_create(outputs)
            result.sources += len(sources)
            result.references += len(refs)
            result.outputs += len(outputs)
            result.units += len(units)
        return writes.finish(analyse=analyse)
    except BaseException as exc:
        writes.undo(exc)
        raise


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
    by_output: dict[tuple[str, str], list[DARow]] = defaultdict(list)
    for row in parsed.rows:
        by_output[(row.source_id, row.system)].append(row)
    check_import_limits(
        filename=filename, sources=len(parsed.source_texts), outputs=len(by_output),
        texts=((row.line, column, value) for row in parsed.rows
               for column, value in (("original", row.original), ("output", row.output))),
    )
    writes = _begin(slug=campaign_slug, name=campaign_name, user=user, ratings=parsed.max_raters_per_output,
                    digest=digest, filename=filename, kind=ImportBatch.Kind.DA, layout=parsed.layout_facts(),
                    rows=len(parsed.rows))
    try:
        _write_da(writes, parsed, by_output, references, filename)
        return writes.finish(analyse=analyse)
    except BaseException as exc:
        writes.undo(exc)
        raise


def _write_da(writes: _Writes, parsed: DAFile, by_output: dict[tuple[str, str], list[DARow]],
              references: dict[str, list[str]] | None, filename: str) -> None:
    campaign, batch, result = writes.campaign, writes.batch, writes.result
    result.warnings.extend(parsed.warnings)
    _check_aspect_scales(campaign, parsed)
    chosen = {sid: _da_source_text(parsed, sid, references) for sid in parsed.source_texts}
    existing = _existing_sources(campaign, chosen)
    for sid, source in existing.items():
        if source.text != chosen[sid][0]:
            raise FormatError(f"source {sid!r} already exists in campaign '{campaign.slug}' with a different text",
                              file=filename, line=chosen[sid][1])
    for sid, texts in parsed.ambiguous_sources().items():
        seen = ", ".join(f"line {t.line} ({t.rows} rows)" for t in texts)
        result.warnings.append(f"source {sid!r} has {len(texts)} different original texts ({seen}); "
                               f"kept the one of line {chosen[sid][1]}")
    taken = _existing_outputs([s.pk for s in existing.values()])
    for (sid, system), rows in by_output.items():
        if sid in existing and (existing[sid].pk, system) in taken:
            raise FormatError(f"source {sid!r} already has an output of system {system!r} in this campaign",
                              file=filename, line=rows[0].line)
    units = _existing_units([s.pk for s in existing.values()])
    have_refs = _with_references([s.pk for s in existing.values()])
    systems = writes.systems(system for _, system in by_output)
    order_base = Source.objects.filter(campaign=campaign).count()
    orders = {sid: order_base + i for i, sid in enumerate(chosen)}
    outputs_of: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for key in by_output:
        outputs_of[key[0]].append(key)
    rows_of: dict[str, list[DARow]] = defaultdict(list)
    for row in parsed.rows:
        rows_of[row.source_id].append(row)
    scale = {a.name: a.scale for a in parsed.aspects}
    counts: dict[str, int] = dict.fromkeys(scale, 0)
    missing_refs = 0
    for step in _steps(list(chosen), lambda sid: 2 + 2 * len(outputs_of[sid]) + 2 * len(rows_of[sid]) * len(scale)):
        with writes.step():
            new = writes.new_sources([Source(campaign=campaign, external_id=sid, text=chosen[sid][0],
                                             order=orders[sid]) for sid in step if sid not in existing])
            sources = {**{s.external_id: s for s in new}, **{sid: existing[sid] for sid in step if sid in existing}}
            _units_for(((sources[sid], [by_output[key][0].output for key in outputs_of[sid]]) for sid in step), units,
                       writes)
            keys = [key for sid in step for key in outputs_of[sid]]
            outputs = Output.objects.bulk_create([
                Output(source=sources[sid], system=systems[system],
                       unit=units[(sources[sid].pk, text_key(by_output[(sid, system)][0].output))],
                       text=by_output[(sid, system)][0].output.strip(),
                       raw_text=(first.output if (first := by_output[(sid, system)][0]).output != first.output.strip()
                                 else ""),
                       import_batch=batch, row_index=by_output[(sid, system)][0].line)
                for sid, system in keys
            ])
            output_of = dict(zip(keys, outputs, strict=True))
            step_rows = [row for sid in step for row in rows_of[sid]]
            annotations: dict[tuple[str, str], Annotation] = {}
            for row in step_rows:
                if (row.source_id, row.rater) not in annotations and row.ratings:
                    annotations[(row.source_id, row.rater)] = Annotation(
                        source=sources[row.source_id], import_batch=batch, rater_slot=_da_rater_slot(row.rater),
                        status=Annotation.Status.SUBMITTED,
                    )
            Annotation.objects.bulk_create(annotations.values())
            judgements = [
                AspectJudgement(annotation=annotations[(row.source_id, row.rater)],
                                output=output_of[(row.source_id, row.system)], aspect=aspect, raw=raw,
                                z=row.zscores.get(aspect), scale=scale[aspect])
                for row in step_rows for aspect, raw in row.ratings.items()
            ]
            AspectJudgement.objects.bulk_create(judgements)
            if references is not None:
                missing_refs += _references_write(sources.values(), references, have_refs, result)
        for judgement in judgements:
            counts[judgement.aspect] += 1
        result.outputs += len(outputs)
        result.units += len({o.unit_id for o in outputs})
        result.ratings += sum(1 for row in step_rows if row.ratings)
    result.sources = len(chosen)
    result.aspect_ratings = counts
    if missing_refs:
        result.warnings.append(f"{missing_refs} of {len(chosen)} sources have no reference in the reference files")
