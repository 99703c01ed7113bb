"""Live events of annotation for researchers' dashboards (sent with `core.events`).

Group names: `campaign-<id>`. Consumers (evaluation.consumers) relay the events to browsers.
"""

from __future__ import annotations

from core.events import broadcast, campaign_group


def annotation_submitted(*, annotation_id: int) -> None:
    from annotation.models import Annotation, Assignment
    from annotation.rules import percent
    from annotation.selectors import annotator_share

    annotation = Annotation.objects.select_related("assignment__campaign", "annotator", "source").get(
        pk=annotation_id)
    assignment = annotation.assignment
    if assignment is None:
        return
    campaign_id = assignment.campaign_id
    share = annotator_share(campaign=assignment.campaign, annotator_id=assignment.annotator_id)
    done, total = share["done"], share["total"]
    broadcast(
        campaign_group(campaign_id),
        {
            "event": "annotation.submitted",
            "annotator": annotation.annotator.pseudonym if annotation.annotator else None,
            "source": annotation.source.external_id,
            "annotator_done": done,
            "annotator_total": total,
            "annotator_percent": percent(done, total),
            "annotator_more": share["more"],
            "source_done": Assignment.objects.filter(
                source_id=annotation.source_id, status=Assignment.Status.SUBMITTED
            ).count(),
        },
    )
