"""The learned-metric family on the Django side: what a version of any kind trains on, and the checks of a new
version's campaigns and corpora.

The kinds themselves (LENS, REFEREE, SIERA...: their options, training, checkpoints and scorers) live in the
pure registry :mod:`metrics.learned.kinds`; everything here asks a kind for what differs (its config class,
whether it reads ratings, references or corpora) and has no branch per kind. The version registry, the
Celery task, promotion, serving, the metric registry, the commands and the admin work on version rows and
these functions. Heavy packages (torch) are imported inside the functions, never at Django start-up.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from django.conf import settings

from annotation.models import Annotation, Campaign, Corpus, OutputJudgement, Reference
from annotation.rules import sentence_key
from annotation.selectors import campaign_aspect_scales, corpus_rows
from core.errors import ServiceError
from metrics.learned.config import ConfigError, Json, LearnedConfig
from metrics.learned.kinds import (
    ComponentRead,
    LearnedData,
    LearnedKind,
    LearnedTraining,
    TrainingInputs,
    VersionInfo,
    get_kind,
    kinds,
)
from metrics.models import LearnedVersion
from metrics.suite.version import SUITE_VERSION

DEFAULT_CORPUS = "asset-valid"
"""The corpus REFEREE and SIERA train on when none is named (``import_corpus --name asset-valid``)."""
SNAPSHOT_FILE = "snapshot.json"
RATINGS_SNAPSHOT_FILE = "ratings_snapshot.json"
"""Beside ``snapshot.json`` when a version reads both ratings and a corpus: the ratings part alone."""


@dataclass(frozen=True)
class TrainingData:
    """What a version trains on, and what is recorded about it on the row and beside its checkpoint."""

    sha256: str
    counts: dict[str, int]
    warnings: list[str]
    canonical: bytes
    config: LearnedConfig
    inputs: TrainingInputs
    files: dict[str, bytes]
    """Files written into the version's directory before training (name -> content)."""


def learned_kind(name: str, *, field: str = "kind") -> LearnedKind:
    """The registered kind ``name``; a 400 naming the registered ones otherwise."""
    try:
        return get_kind(name)
    except KeyError:
        raise ServiceError(f"unknown learned metric {name!r}; one of: {', '.join(kinds())}", field=field) from None


def learned_config(kind: LearnedKind, options: Mapping[str, Json]) -> LearnedConfig:
    """The kind's validated config of a person's options; a 400 naming the bad option."""
    try:
        return kind.config(dict(options))
    except ConfigError as exc:
        raise ServiceError(str(exc), field=exc.key) from None


def learned_version_info(version: LearnedVersion) -> VersionInfo:
    """What a version's score signature reads of it (the metric registry's signature, and the blend's record
    of each learned version it reads)."""
    return VersionInfo(
        pk=version.pk, encoder=version.encoder, encoder_identity=dict(version.encoder_identity or {}),
        seed=version.seed, k=version.k, hyperparameters=dict(version.hyperparameters or {}),
        checkpoint_path=version.checkpoint_path,
        # bf16 and int8 serving scores differ slightly from fp32 ones: a kind whose serving precision changes
        # its scores says it in the signature
        serving_precision=settings.LEARNED_SERVING_PRECISION, suite_version=SUITE_VERSION,
    )


def learned_version_components(version: LearnedVersion) -> list[ComponentRead]:
    """The metrics a version reads (a blend's components), each with its signature when the version was
    trained and now; empty for a kind that reads none."""
    if version.status != LearnedVersion.Status.SUCCEEDED or not version.checkpoint_path:
        return []
    try:
        kind = get_kind(version.kind)
    except KeyError:  # a kind that is no longer registered
        return []
    return kind.components(learned_version_info(version))


def active_learned_versions(*, besides: str) -> list[tuple[str, VersionInfo]]:
    """(kind, version) of the active version of every kind but ``besides`` that has one, in the registry's
    order (what a kind that ``reads_learned`` reads)."""
    active = {v.kind: v for v in LearnedVersion.objects.filter(is_active=True, status=LearnedVersion.Status.SUCCEEDED)}
    return [(name, learned_version_info(active[name])) for name in kinds()
            if name != besides and name in active and not get_kind(name).reads_learned]


# --- shared checks and data ---------------------------------------------------------------------------------


def check_rated_campaigns(campaigns: Sequence[Campaign], *, label: str, aspect: str | None = None) -> None:
    """Each campaign holds the ratings a version fine-tunes on: overall ratings, or those of ``aspect`` (a
    multi-aspect campaign's, e.g. Simplicity-DA's ``simplicity``); a 400 naming the campaign otherwise."""
    if not campaigns:
        raise ServiceError("choose at least one campaign", field="campaigns")
    for campaign in campaigns:
        submitted = Annotation.objects.filter(source__campaign=campaign, status=Annotation.Status.SUBMITTED)
        aspects = list(campaign_aspect_scales(campaign))
        if aspect is not None:
            if aspect not in aspects:
                held = f"its aspects are {', '.join(aspects)}" if aspects else "it holds overall ratings only"
                raise ServiceError(f"campaign {campaign.slug!r} has no {aspect!r} ratings ({held})", field="aspect")
        elif not OutputJudgement.objects.filter(annotation__in=submitted).exists():
            if aspects:
                raise ServiceError(
                    f"campaign {campaign.slug!r} holds ratings of aspects ({', '.join(aspects)}), not the overall "
                    f"ratings {label} fine-tunes on by default; REFEREE fine-tunes on one aspect with the option "
                    f"aspect, e.g. aspect=\"{aspects[-1]}\"",
                    field="campaigns")
            raise ServiceError(f"campaign {campaign.slug!r} has no submitted ratings ({label} fine-tunes on them)",
                               field="campaigns")


def check_corpora(names: Sequence[str]) -> list[str]:
    """The corpus names, each imported; a 400 naming the first that is not, and how to import it."""
    chosen = list(dict.fromkeys(n.strip() for n in names if n.strip())) or [DEFAULT_CORPUS]
    imported = set(Corpus.objects.filter(name__in=chosen).values_list("name", flat=True))
    for name in chosen:
        if name not in imported:
            raise ServiceError(
                f"corpus {name!r} has not been imported; import it once with `python manage.py import_corpus "
                f"--name {name} ORIG SIMP...` (for {DEFAULT_CORPUS}: ../shared/data/asset/asset.valid.orig and "
                f"asset.valid.simp.0-9)",
                field="corpus",
            )
    return chosen


def corpus_training_rows(names: Sequence[str]) -> tuple[list[tuple[str, str, list[str]]], dict[str, object]]:
    """(source id, complex, references) of every item of the corpora, and a canonical description."""
    rows: list[tuple[str, str, list[str]]] = []
    for name in names:
        corpus = Corpus.objects.get(name=name)
        rows.extend((f"{name}/{index}", source, refs) for index, source, refs in corpus_rows(corpus=corpus))
    return rows, {"corpora": list(names), "rows": [[sid, c, refs] for sid, c, refs in rows]}


def learned_training_source_keys(version: LearnedVersion) -> set[str]:
    """The complex sentences ``version`` learned from (``annotation.rules.sentence_key``): the sources of its
    campaigns and the corpus rows it trained on, as they are in the database now. A perturbation testbed run
    on these measures the metric on sentences it has seen."""

    # read on first use, as below: Django's start-up imports this module (the admin) but not the statistics
    # core that the selectors bring
    from metrics.selectors import campaign_source_keys

    keys: set[str] = set()
    for campaign in version.campaigns.all():
        keys |= campaign_source_keys(campaign)
    used = learned_kind(version.kind).stored_config(version.hyperparameters).corpus_rows_used
    if used is not None and version.corpora:
        rows, _ = corpus_training_rows(version.corpora)
        keys |= {sentence_key(text) for _, text, _ in (rows[:used] if used else rows)}
    return keys


def learned_training_again(version: LearnedVersion, *, device: str | None) -> LearnedData:
    """``version``'s training data read again now (for a kind that trains it again without some sources: the
    blend's cross-fitting), with a warning when they are no longer those it trained on."""
    data = learned_training_data(version, device=device)
    warnings = list(data.warnings)
    if version.data_sha256 and data.sha256 != version.data_sha256:
        warnings.append(f"its training data changed since v{version.pk} was trained (sha256 {data.sha256[:12]}, "
                        f"was {version.data_sha256[:12]}): it was cross-fitted on them as they are now")
    return LearnedData(config=data.config, inputs=data.inputs, warnings=warnings)


def learned_trainings(learned: Sequence[tuple[str, VersionInfo]], *, device: str | None,
                      ) -> dict[int, LearnedTraining]:
    """What each version of ``learned`` trained on, by id: its source keys now, and its data on demand."""
    rows = LearnedVersion.objects.filter(pk__in=[info.pk for _, info in learned]).prefetch_related("campaigns")
    return {row.pk: LearnedTraining(source_keys=frozenset(learned_training_source_keys(row)),
                                    data=partial(learned_training_again, row, device=device)) for row in rows}


def learned_version_preview(version: LearnedVersion) -> list[str]:
    """What ``version``'s run will cost beyond its own training, as its kind says from what it would read now
    (the blend: which active learned versions it cross-fits, up to how many trainings each and about how
    long): the command prints it before training, the learned page shows it when the run is queued."""
    kind = learned_kind(version.kind)
    if not kind.reads_learned:
        return []
    learned = active_learned_versions(besides=kind.name)
    if not learned:
        return []
    keys = learned_training_source_keys(version)
    seconds = dict(LearnedVersion.objects.filter(pk__in=[info.pk for _, info in learned])
                   .values_list("pk", "train_seconds"))
    inputs = TrainingInputs(learned=learned, learned_training=learned_trainings(learned, device=None))
    return kind.training_preview(kind.stored_config(version.hyperparameters), inputs, source_keys=keys,
                                 seconds=seconds)


def _canonical(document: Mapping[str, object]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def check_version_sources(
    kind: LearnedKind, config: LearnedConfig, *, campaigns: Sequence[Campaign], corpora: Sequence[str],
) -> list[str]:
    """Check what a new version of ``kind`` would train on; returns the corpora it reads (defaulted).

    A kind that fine-tunes on ratings needs rated campaigns (with references when its metric reads them);
    one that does not refuses campaigns; one that reads a corpus needs it imported.
    """
    if kind.needs_campaigns:
        if kind.needs_references:
            for campaign in campaigns:
                if not Reference.objects.filter(source__campaign=campaign).exists():
                    raise ServiceError(f"campaign {campaign.slug!r} has no references ({kind.label} needs at least "
                                       "one)", field="campaigns")
        check_rated_campaigns(campaigns, label=kind.label, aspect=config.rated_aspect)
    elif campaigns:
        raise ServiceError(f"{kind.label} trains on a corpus only; do not choose campaigns", field="campaigns")
    uses_corpus = kind.uses_corpora and config.corpus_rows_used is not None
    return check_corpora(corpora) if uses_corpus else []


def learned_training_data(version: LearnedVersion, *, device: str | None) -> TrainingData:
    """What ``version`` trains on, read from the database now: its campaigns' ratings (split by source into
    training and held-out ones) and its corpora's rows, as its kind reads them, and their canonical record."""
    from metrics.services.snapshot import lens_training_snapshot  # on first use (see above)

    kind = learned_kind(version.kind)
    config = kind.stored_config(version.hyperparameters, device=device)
    inputs, counts, warnings = TrainingInputs(), dict[str, int](), list[str]()
    files: dict[str, bytes] = {}
    ratings: bytes | None = None
    if kind.needs_campaigns:
        snapshot = lens_training_snapshot(
            campaigns=list(version.campaigns.all()), heldout_fraction=config.heldout_fraction,
            seed=config.first_seed, aspect=config.rated_aspect, require_references=kind.needs_references)
        inputs = TrainingInputs(train=snapshot.train, heldout=snapshot.heldout)
        counts, warnings, ratings = dict(snapshot.counts), list(snapshot.warnings), snapshot.canonical
    if kind.reads_learned:
        learned = active_learned_versions(besides=kind.name)
        inputs = replace(inputs, learned=learned, learned_training=learned_trainings(learned, device=device))
        counts["learned_versions"] = len(learned)
        if ratings is not None and not kind.uses_corpora:
            files[RATINGS_SNAPSHOT_FILE] = ratings
            canonical = _canonical({"format": f"rank-and-rate-{kind.name}-snapshot/1",
                                    "ratings": hashlib.sha256(ratings).hexdigest(),
                                    "learned": [get_kind(name).signature(info) for name, info in learned]})
            return TrainingData(hashlib.sha256(canonical).hexdigest(), counts, warnings, canonical, config, inputs,
                                files)
    if not kind.uses_corpora:
        assert ratings is not None, f"{kind.name} reads neither ratings nor corpora"
        return TrainingData(hashlib.sha256(ratings).hexdigest(), counts, warnings, ratings, config, inputs, files)
    rows, corpus_doc = corpus_training_rows(version.corpora) if config.corpus_rows_used is not None else ([], {})
    document: dict[str, object] = {"format": f"rank-and-rate-{kind.name}-snapshot/1", "corpus": corpus_doc}
    if ratings is not None:
        document["ratings"] = hashlib.sha256(ratings).hexdigest()
        files[RATINGS_SNAPSHOT_FILE] = ratings
    canonical = _canonical(document)
    inputs = replace(inputs, corpus=rows)
    return TrainingData(hashlib.sha256(canonical).hexdigest(), {**counts, "corpus_sources": len(rows)}, warnings,
                        canonical, config, inputs, files)
