"""A live campaign as the allocation simulator's study (evaluation.services.allocation, metrics.services.allocation):
a full reveal is the campaign's own leaderboard, screens are annotations, stored metric scores are read."""

from __future__ import annotations

import numpy as np
import pytest

from annotation.models import Annotation, Assignment, Output, OutputJudgement, RatingUnit
from annotation.services.annotations import annotation_submit
from annotation.services.assignments import campaign_add_annotators
from core.errors import ServiceError
from evaluation.allocation import full_leaderboard, make_policy, simulate
from evaluation.services.allocation import campaign_study
from evaluation.services.report import campaign_report
from metrics.models import MetricScore
from metrics.services.allocation import campaign_allocation_study
from tests.factories import STEPS_REVIEWED, AnnotatorFactory, CampaignFactory, public_id, rated_campaign

pytestmark = pytest.mark.django_db

QUALITY = {"Splitter": 88, "Rewriter": 80, "Lexical": 72, "Trimmer": 64, "Copy": 55, "Copy-2": 55,
           "Short-T5": 35, "Hallucinator": 25, "Scramble": 5}
STYLE = [(1.0, 0.0), (0.6, 30.0), (0.8, 10.0)]  # each annotator uses the scale differently


def rate(assignment: Assignment, scale: float, offset: float) -> None:
    items = []
    for i, unit in enumerate(RatingUnit.objects.filter(source=assignment.source).prefetch_related("outputs__system")):
        base = max(QUALITY[o.system.name] for o in unit.outputs.all())
        wiggle = ((assignment.source_id * 7 + i * 13 + int(offset)) % 9) - 4
        items.append({"unit": public_id(assignment, unit.pk), "category": "paraphrase",
                      "rating": min(100.0, max(0.0, base * scale + offset + wiggle)), "rank": i + 1})
    annotation_submit(assignment=assignment, user=assignment.annotator, submit_key=f"k-{assignment.pk}",
                      payload={"steps_reviewed": STEPS_REVIEWED, "units": items})


@pytest.fixture
def collected(demo_campaign, annotators):
    campaign_add_annotators(campaign=demo_campaign, annotators=annotators)
    for user, (scale, offset) in zip(annotators, STYLE, strict=True):
        for assignment in Assignment.objects.filter(annotator=user).order_by("id"):
            rate(assignment, scale, offset)
    return demo_campaign


def test_full_reveal_is_the_campaigns_leaderboard(collected):
    """Collected ratings (named raters, z-scores recomputed; two systems sharing a rating unit): the simulator's
    leaderboard of every rating is the report's, row for row, and a uniform run ends on it."""
    study = campaign_study(collected)
    assert study.recompute_z
    report = campaign_report(campaign=collected, n_boot=200, seed=3)
    assert [dict(r) for r in full_leaderboard(study, n_boot=200, seed=3).rows] == report["systems"]
    assert study.full_ratings == OutputJudgement.objects.filter(annotation__source__campaign=collected).count()
    trace = simulate(study, make_policy("uniform"), seed=0)
    assert trace.cost[-1] == study.full_ratings and trace.tau[-1] == 1.0 and trace.top1[-1]


def test_full_reveal_keeps_released_zscores():
    """Judgements that carry released z-scores keep them, as the platform's leaderboard does."""
    campaign = rated_campaign("released", [AnnotatorFactory.create() for _ in range(3)], n_sources=5)
    rng = np.random.default_rng(0)
    for judgement in OutputJudgement.objects.filter(annotation__source__campaign=campaign):
        judgement.z_score = float(rng.normal())  # unrelated to the raw ratings: only kept ones reproduce
        judgement.save(update_fields=["z_score"])
    study = campaign_study(campaign)
    assert not study.recompute_z
    report = campaign_report(campaign=campaign, n_boot=100, seed=0)
    assert [dict(r) for r in full_leaderboard(study, n_boot=100, seed=0).rows] == report["systems"]


def test_each_annotation_is_one_screen():
    """The k-th annotation of a source is its slot k, even one that rated only some outputs (a short
    screen), so its ratings come from one rater."""
    raters = [AnnotatorFactory.create() for _ in range(2)]
    campaign = rated_campaign("screens", raters, n_sources=3)
    source = campaign.sources.order_by("order").first()
    short = Annotation.objects.filter(source=source, annotator=raters[0]).get()
    OutputJudgement.objects.filter(annotation=short, output__system__name="random").delete()
    study = campaign_study(campaign)
    assert study.shape == (3, 2, 3)
    s = study.sources.index(source.external_id)
    cells = study.present[s]
    assert cells.sum(axis=1).tolist() == [2, 3]  # slot 0: the short screen
    assert len({int(r) for r in study.rater[s, 0] if r >= 0}) == 1
    assert study.full_ratings == 3 * 2 * 3 - 1


def test_stored_metric_scores_are_oriented_higher_is_better():
    campaign = rated_campaign("scored", [AnnotatorFactory.create() for _ in range(2)], n_sources=2)
    outputs = list(Output.objects.filter(source__campaign=campaign).select_related("system", "source"))
    for output in outputs:
        MetricScore.objects.create(output=output, metric="fkgl", signature="fkgl-v1", value=float(output.pk))
    study = campaign_allocation_study(campaign)
    assert study.metric_names == ["fkgl"]  # no SARI or BLEU stored: left out
    assert study.metric_scores is not None
    for output in outputs:
        s, k = study.sources.index(output.source.external_id), study.systems.index(output.system.name)
        assert study.metric_scores[0, s, k] == -float(output.pk)  # FKGL: lower is simpler
    assert campaign_study(campaign).metric_scores is None


def test_a_campaign_without_ratings_is_refused():
    with pytest.raises(ServiceError) as caught:
        campaign_study(CampaignFactory.create(slug="empty"))
    assert caught.value.field == "campaign"
