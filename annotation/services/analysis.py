"""Running the text-analysis engine over a campaign's outputs and storing the results per rating unit.

Analysis runs after every import in a Celery task (queued by ``annotation.services.queue``, with progress in a
BackgroundJob) and again whenever the engine version or the campaign's threshold changes, or when a unit's analysis is
degraded: made without the token encoder because it failed, so stored under ``<version>+lexical``
(see :data:`annotation.analysis.DEGRADED_SUFFIX`) and redone by the next run.
"""

from __future__ import annotations

from annotation.models import Campaign, RatingUnit
from annotation.selectors import units_needing_analysis
from core.models import BackgroundJob
from core.services import background_job_finish, background_job_progress, background_job_start


def campaign_analyse(*, campaign: Campaign, job: BackgroundJob | None = None, batch_sources: int = 20) -> int:
    """Analyse every unit that is missing, stale or degraded; returns how many were analysed.

    A job that ends with degraded units says so in its ``error`` note (the job itself is done).
    """
    from annotation.analysis import analyze_many

    # Only what the core reads: the stale analyses (large JSON) and the sources' other columns stay in the database.
    pending = list(
        units_needing_analysis(campaign).select_related("source").only("id", "text", "source__text")
        .order_by("source_id", "id")
    )
    if job is not None:
        background_job_start(job_id=job.pk, total=len(pending))
    threshold = campaign.compression_threshold
    done = degraded = 0
    step = max(1, batch_sources * 24)
    for start in range(0, len(pending), step):
        chunk = pending[start : start + step]
        results = analyze_many([(u.source.text, u.text) for u in chunk], compression_threshold=threshold)
        for unit, result in zip(chunk, results, strict=True):
            unit.analysis = result.to_dict()
            unit.auto_category = result.category if not result.error else ""
            unit.analysis_error = result.error or ""
            unit.analysis_version = result.engine_version
            unit.analysed_threshold = threshold
            degraded += int(result.degraded)
        RatingUnit.objects.bulk_update(
            chunk, ["analysis", "auto_category", "analysis_error", "analysis_version", "analysed_threshold"]
        )
        done += len(chunk)
        if job is not None:
            background_job_progress(job_id=job.pk, done=done)
    if job is not None:
        note = (
            f"{degraded} of {done} output texts were analysed without the token encoder (it failed): "
            "lexical alignment only, redone by the next analysis run."
        ) if degraded else ""
        background_job_finish(job_id=job.pk, done=done, note=note)
    return done
