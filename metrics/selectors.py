"""Reads of the LENS registry and of campaign ratings in the shape LENS training and meta-evaluation need."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet, Value
from django.http import Http404

from annotation.models import Campaign, Output, Reference, Source, User
from annotation.rules import UNCATEGORISED, category_label, final_category, sentence_key
from annotation.selectors import CampaignPurpose, campaign_list_visible
from core.errors import NotAllowed, NotFound, ServiceError
from core.models import BackgroundJob
from evaluation.selectors import (
    ROW_CHUNK,
    campaign_aspect_ratings,
    campaign_judgement_rows,
    campaign_report_fingerprint,
    judgement_votes,
    judgement_zscores,
)
from metrics.models import LearnedVersion, MetricScore, MetricSensitivity, TrainingEvent

SCORE_JOB_KIND = "metric_scores"
"""The ``BackgroundJob.kind`` of scoring a campaign's outputs with metrics (learned versions included)."""
TESTBED_JOB_KIND = "testbed"
"""The ``BackgroundJob.kind`` of a perturbation-testbed run."""

# --- Registry -------------------------------------------------------------------------------------------


def learned_version_list() -> QuerySet[LearnedVersion]:
    return (
        LearnedVersion.objects.select_related("started_by", "promoted_by")
        .prefetch_related("campaigns")
        .order_by("-created_at", "-id")
    )


# Who sees what of a learned-metric version. Full details (note, training data counts and warnings, held-out
# results, the training curve, hyper-parameters, errors, who started it, its campaigns): admins; the researcher
# who started it; a researcher who owns every campaign it trained on (a version trained on public corpora only
# is no researcher's). Any other researcher sees only what using a succeeded version needs, the fields below
# (``campaigns`` names only campaigns the viewer owns), and nothing at all of a version that did not succeed.
LEARNED_PUBLIC_FIELDS = (
    "id", "kind", "label", "status", "is_active", "campaigns", "created_at", "finished_at", "promoted_at",
)


def learned_version_list_for(*, user: User) -> QuerySet[LearnedVersion]:
    """The versions ``user`` may list, newest first, each with ``full_details`` (bool): the one visibility
    rule of learned-metric versions, for the API, the pages and the training websocket."""
    versions = learned_version_list()
    if user.is_platform_admin:
        return versions.annotate(full_details=Value(True))
    links = LearnedVersion.campaigns.through.objects.filter(learnedversion_id=OuterRef("pk"))
    owned = campaign_list_visible(user=user, purpose=CampaignPurpose.MANAGE)
    full = Q(started_by_id=user.pk) | (Exists(links) & ~Exists(links.exclude(campaign_id__in=owned.values("pk"))))
    return versions.annotate(full_details=full).filter(full | Q(status=LearnedVersion.Status.SUCCEEDED))


def learned_version_get_for(*, user: User, version_id: int) -> LearnedVersion:
    """The version if ``user`` may see it (with ``full_details``); a 404 otherwise, the same as no version."""
    version = learned_version_list_for(user=user).filter(pk=version_id).first()
    if version is None:
        raise Http404("No such learned-metric version.")
    return version


def learned_version_require_full(version: LearnedVersion) -> None:
    """403 unless the viewer may see the version's full details (``version`` from ``learned_version_get_for``)."""
    if not getattr(version, "full_details", False):
        raise NotAllowed("a version's training details and curve are shown to whoever started it and to the owner "
                         "of every campaign it trained on", field="version")


def learned_active_version(kind: str) -> LearnedVersion | None:
    """The version of ``kind`` (lens, referee, siera) that serves, if any."""
    return LearnedVersion.objects.filter(is_active=True, kind=kind).first()


def learned_latest_version(kind: str) -> LearnedVersion | None:
    """The most recently finished successful version of ``kind`` (active or not)."""
    return (
        LearnedVersion.objects.filter(status=LearnedVersion.Status.SUCCEEDED, kind=kind)
        .order_by("-finished_at", "-id")
        .first()
    )


def learned_succeeded_ids(kind: str) -> list[int]:
    """Ids of the succeeded versions of ``kind``, newest first."""
    return list(
        LearnedVersion.objects.filter(status=LearnedVersion.Status.SUCCEEDED, kind=kind)
        .order_by("-id")
        .values_list("pk", flat=True)
    )


def lens_active_version() -> LearnedVersion | None:
    return learned_active_version("lens")


def lens_latest_version() -> LearnedVersion | None:
    """The most recently finished successful LENS version (active or not)."""
    return learned_latest_version("lens")


VersionRef = int | Literal["active", "latest"]
"""A LENS version as a request names it: "active", "latest" (newest succeeded) or an id."""

_VERSION_ID = re.compile(r"[0-9]{1,18}")  # ASCII digits only, and an id that fits a 64-bit key


def learned_version_ref(value: str | None, *, param: str = "version") -> VersionRef:
    """Parse a ``?version=`` value; absent means "active". Anything else is a 400 naming ``param``."""
    if value is None or value == "active":
        return "active"
    if value == "latest":
        return "latest"
    if _VERSION_ID.fullmatch(value):
        return int(value)
    shown = value if len(value) <= 40 else value[:40] + "…"
    raise ServiceError(f"{param} must be 'active', 'latest' or a version id (got {shown!r})", field=param)


def learned_version_get(ref: VersionRef, *, param: str = "version") -> LearnedVersion | None:
    """The version ``ref`` names: None when there is no active (or no succeeded) one; 404 for an unknown id."""
    if ref == "active":
        return lens_active_version()
    if ref == "latest":
        return lens_latest_version()
    version = LearnedVersion.objects.filter(pk=ref).first()
    if version is None:
        raise NotFound(f"no LENS version {ref}", field=param)
    return version


def training_event_payload(event: TrainingEvent) -> dict[str, Any]:
    return {
        "kind": event.kind,
        "epoch": event.epoch,
        "step": event.step,
        "total_steps": event.total_steps,
        "loss": event.loss,
        "heldout_tau": event.heldout_tau,
        "heldout_pearson": event.heldout_pearson,
        "heldout_loss": event.heldout_loss,
        "is_best": event.is_best,
    }


def learned_version_events(version: LearnedVersion) -> list[dict[str, Any]]:
    """The persisted training curve of a version, in step order."""
    return [training_event_payload(e) for e in TrainingEvent.objects.filter(version=version).order_by("step", "id")]


def learned_version_state(version: LearnedVersion) -> dict[str, Any]:
    """Status fields a live page needs besides the curve."""
    return {
        "version": version.pk,
        "status": version.status,
        "is_active": version.is_active,
        "cancel_requested": version.cancel_requested,
        "error": version.error,
        "heldout_results": version.heldout_results,
    }


# --- Campaign ratings -----------------------------------------------------------------------------------


@dataclass
class RatedOutput:
    """One rated output of a campaign with everything LENS training and meta-evaluation use."""

    campaign: str
    source_pk: int
    source: str  # external id
    complex: str
    output_pk: int
    system: str
    text: str
    category: str
    ratings: dict[str, float] = field(default_factory=dict)  # rater key -> raw 0-100 rating
    zscores: list[float] = field(default_factory=list)
    # Multi-aspect campaigns: aspect -> mean z over raters (released, else WMT per rater and aspect) and
    # aspect -> mean raw rating on the aspect's scale. Empty for Rank & Rate ratings.
    aspects_z: dict[str, float] = field(default_factory=dict)
    aspects_raw: dict[str, float] = field(default_factory=dict)

    @property
    def mean_z(self) -> float | None:
        finite = [z for z in self.zscores if z is not None and math.isfinite(z)]
        return math.fsum(finite) / len(finite) if finite else None


def _rated_output_values(
    campaign: Campaign, pks: set[int]
) -> dict[int, tuple[int, str, str, int, int, str]]:
    """Output pk -> (source pk, source external id, source text, source order, file row, output text)."""
    if not pks:
        return {}
    rows = Output.objects.filter(source__campaign=campaign).values_list(
        "id", "source_id", "source__external_id", "source__text", "source__order", "row_index", "text"
    )
    return {
        pk: (source_pk, source, complex_text, order, row_index, text)
        for pk, source_pk, source, complex_text, order, row_index, text in rows.iterator(chunk_size=ROW_CHUNK)
        if pk in pks
    }


def campaign_rated_outputs(campaign: Campaign) -> list[RatedOutput]:
    """Outputs of a campaign with at least one submitted rating, in source then file order.

    Categories: ``annotation.rules.final_category`` (``"unknown"`` when there is none: such outputs are
    compared only with each other, in the overall tau-like coefficient).

    z-scores: collected ratings get the campaign's WMT z-scores (per rater), imported ones keep theirs.

    Aspects (multi-aspect campaigns, ``evaluation.selectors.campaign_aspect_ratings``): ``aspects_raw`` and
    ``aspects_z`` hold each output's means per aspect; outputs rated only on aspects are included with
    empty ``ratings`` and ``zscores``.
    """
    rows = list(campaign_judgement_rows(campaign))
    zscores = judgement_zscores(rows)
    rated: dict[int, RatedOutput] = {}
    judged_categories = judgement_votes(rows)
    given_and_automatic: dict[int, tuple[str, str]] = {}
    position: dict[int, tuple[int, int, int]] = {}
    outputs = _rated_output_values(campaign, {row.output_id for row in rows})
    for j in rows:
        entry = rated.get(j.output_id)
        if entry is None:
            source_pk, source_id, complex_text, order, row_index, text = outputs[j.output_id]
            position[j.output_id] = (order, row_index, j.output_id)
            entry = rated[j.output_id] = RatedOutput(
                campaign=campaign.slug, source_pk=source_pk, source=source_id, complex=complex_text,
                output_pk=j.output_id, system=j.system, text=text, category=UNCATEGORISED,
            )
            given_and_automatic[j.output_id] = (j.given_category, j.auto_category)
        entry.ratings[j.rater] = float(j.rating)
        z = j.z_score if j.z_score is not None else zscores.get((j.annotation_id, j.output_id))
        if z is not None:
            entry.zscores.append(float(z))
    aspect_means = campaign_aspect_ratings(campaign).output_means()
    if aspect_means:
        missing = [pk for pk in aspect_means if pk not in rated]
        for output in Output.objects.filter(pk__in=missing).select_related("source", "system", "unit"):
            source = output.source
            rated[output.pk] = RatedOutput(
                campaign=campaign.slug, source_pk=source.pk, source=source.external_id, complex=source.text,
                output_pk=output.pk, system=output.system.name, text=output.text, category=UNCATEGORISED,
            )
            given_and_automatic[output.pk] = (output.given_category, output.unit.auto_category)
            position[output.pk] = (source.order, output.row_index, output.pk)
        for pk, means in aspect_means.items():
            rated[pk].aspects_raw = dict(means.raw)
            rated[pk].aspects_z = dict(means.z)
    for pk, entry in rated.items():
        given, automatic = given_and_automatic[pk]
        entry.category = category_label(final_category(judged_categories.get(pk, ()), given=given, automatic=automatic))
    # The judgements' order (source, file row, output), with aspect-only outputs in their places.
    return sorted(rated.values(), key=lambda entry: position[entry.output_pk])


def campaign_source_keys(campaign: Campaign) -> set[str]:
    """A campaign's complex sentences, stripped and lowercased (how the LENS authors match sources)."""
    return {sentence_key(text) for text in Source.objects.filter(campaign=campaign).values_list("text", flat=True)}


def campaign_references(campaign: Campaign) -> dict[int, list[str]]:
    """Source pk -> its references in position order (sources without any are absent)."""
    refs: dict[int, list[str]] = defaultdict(list)
    for source_id, text in (
        Reference.objects.filter(source__campaign=campaign).order_by("source_id", "position").values_list(
            "source_id", "text"
        )
    ):
        refs[source_id].append(text)
    return dict(refs)


# --- Stored scores per system (the LENS leaderboard beside the human one) ------------------------------


def campaign_metric_system_means(campaign: Campaign, metric: str) -> list[dict[str, Any]]:
    """Mean stored score of ``metric`` per system of a campaign, from ``MetricScore`` (its newest signature
    only: rows of an older signature wait to be scored again).

    Returns:
        ``[{"system", "value" (mean value), "components" ({name: mean}), "outputs" (scored)}]`` in system
        name order; empty when nothing was stored under ``metric``.
    """
    rows = (
        MetricScore.objects.filter(metric=metric, output__source__campaign=campaign)
        .order_by("-created_at", "-id")
        .values_list("signature", "output__system__name", "value", "components")
    )
    newest: str | None = None
    values: dict[str, list[float]] = defaultdict(list)
    components: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for signature, system, value, parts in rows.iterator(chunk_size=ROW_CHUNK):
        newest = newest or signature
        if signature != newest:
            continue
        values[system].append(value)
        for name, part in (parts or {}).items():
            components[system][name].append(float(part))
    return [
        {
            "system": system,
            "value": math.fsum(values[system]) / len(values[system]),
            "components": {name: math.fsum(xs) / len(xs) for name, xs in components[system].items()},
            "outputs": len(values[system]),
        }
        for system in sorted(values)
    ]


def campaign_lens_leaderboard(campaign: Campaign, version: LearnedVersion | None = None) -> list[dict[str, Any]]:
    """Mean stored LENS score per system of a campaign, best first.

    Args:
        campaign: The campaign whose outputs were scored with the version (``campaign_lens_rescore``, or the
            metric ``lens:<id>`` of the metric scoring).
        version: The LENS version; None = the active one.

    Returns:
        ``[{"system", "lens" (mean 0-100 score), "lens_z" (mean z), "outputs" (scored), "version"}]``;
        empty when there is no such version or nothing was scored with it yet.
    """
    version = version or lens_active_version()
    if version is None:
        return []
    rows = [
        {"system": row["system"], "lens": row["components"].get("score", 0.0), "lens_z": row["value"],
         "outputs": row["outputs"], "version": version.pk}
        for row in campaign_metric_system_means(campaign, version.metric_name)
    ]
    rows.sort(key=lambda row: -row["lens"])  # stable: ties keep the system name order
    return rows


def testbed_job_list() -> QuerySet[BackgroundJob]:
    """Perturbation-testbed jobs, newest first (everyone's: see ``testbed_job_list_for``)."""
    return BackgroundJob.objects.filter(kind=TESTBED_JOB_KIND).order_by("-created_at")


def campaign_metrics_fingerprint(*, campaign: Campaign, exclude_sources_of: Campaign | None = None) -> str:
    """A cheap key that changes whenever a campaign's metrics-vs-humans comparison would: its ratings
    (``campaign_report_fingerprint``), its stored metric scores, the perturbation-sensitivity records, and the
    sources of the campaign whose sources are left out. Five aggregate queries."""
    scores = MetricScore.objects.filter(output__source__campaign=campaign).aggregate(
        n=Count("id"), last=Max("id"), at=Max("created_at"))
    sensitivity = MetricSensitivity.objects.aggregate(n=Count("id"), last=Max("id"), at=Max("created_at"))
    parts: list[Any] = [campaign_report_fingerprint(campaign=campaign), *scores.values(), *sensitivity.values()]
    if exclude_sources_of is not None:
        other = Source.objects.filter(campaign=exclude_sources_of).aggregate(n=Count("id"), last=Max("id"))
        parts += [exclude_sources_of.pk, *other.values()]
    return ":".join("-" if p is None else str(p) for p in parts)


def testbed_job_list_for(*, user: User) -> QuerySet[BackgroundJob]:
    """The testbed runs ``user`` may see, newest first: admins all, a researcher the runs they started (a run
    scores a shared corpus, not a campaign, so it belongs to whoever asked for it); the one rule for the
    research pages and the progress websocket."""
    if user.is_platform_admin:
        return testbed_job_list()
    if not user.is_researcher:
        return testbed_job_list().none()
    return testbed_job_list().filter(owner_id=user.pk)


def campaign_output_metric_scores(campaign: Campaign, metric: str) -> dict[int, float]:
    """Output pk -> stored score of ``metric`` for a campaign's outputs (its newest signature only, as
    :func:`campaign_metric_system_means` reads them); empty when nothing was stored under ``metric``."""
    rows = (
        MetricScore.objects.filter(metric=metric, output__source__campaign=campaign)
        .order_by("-created_at", "-id")
        .values_list("signature", "output_id", "value")
    )
    newest: str | None = None
    values: dict[int, float] = {}
    for signature, output_id, value in rows.iterator(chunk_size=ROW_CHUNK):
        newest = newest or signature
        if signature == newest:
            values[output_id] = float(value)
    return values
