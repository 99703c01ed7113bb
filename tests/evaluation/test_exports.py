"""The exports, owned by evaluation: the same bytes through the command, the API and the admin action."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign
from evaluation.services.exports import campaign_export_jsonl, campaign_export_simpeval

pytestmark = pytest.mark.django_db


def test_command_api_and_admin_give_the_same_csv(demo_campaign: Campaign, researcher: Any, make_user: Any,
                                                 client_for: Any, tmp_path: Path) -> None:
    expected = campaign_export_simpeval(campaign=demo_campaign)
    assert expected.startswith("original_id,original,") and "\nharbour," in expected

    out = tmp_path / "demo.csv"
    call_command("export_simpeval", "--campaign", "demo", "--out", str(out), stdout=io.StringIO())
    assert out.read_text(encoding="utf-8") == expected

    assert reverse("campaign-export", kwargs={"slug": "demo"}) == "/api/campaigns/demo/export/"
    api = client_for(researcher).get("/api/campaigns/demo/export/")
    assert api.status_code == 200 and api["Content-Type"] == "text/csv"
    assert api["Content-Disposition"] == 'attachment; filename="demo.csv"'
    assert api.content.decode() == expected

    admin = Client()
    admin.force_login(make_user("boss", "admin"))
    changelist = reverse("admin:annotation_campaign_changelist")
    page = admin.get(changelist)
    assert "Export as SimpEval CSV" in page.content.decode()
    response = admin.post(changelist, {"action": "export_simpeval", "_selected_action": [demo_campaign.pk]})
    assert response.status_code == 200 and response["Content-Disposition"] == 'attachment; filename="demo.csv"'
    assert response.content.decode() == expected


def test_admin_export_wants_exactly_one_campaign(demo_campaign: Campaign, make_user: Any) -> None:
    other = Campaign.objects.create(name="Other", slug="other")
    admin = Client()
    admin.force_login(make_user("boss", "admin"))
    changelist = reverse("admin:annotation_campaign_changelist")
    response = admin.post(changelist, {"action": "export_simpeval", "_selected_action": [demo_campaign.pk, other.pk]},
                          follow=True)
    assert response.status_code == 200
    assert "Choose exactly one campaign to export." in response.content.decode()
    # The campaign admin keeps its own pieces: the import page and deleting.
    assert admin.get(reverse("admin:annotation_campaign_import", args=[demo_campaign.pk])).status_code == 200
    assert "delete_selected" in admin.get(changelist).content.decode()


def test_jsonl_command_writes_what_the_service_yields(demo_campaign: Campaign, tmp_path: Path) -> None:
    out = tmp_path / "demo.jsonl"
    call_command("export_jsonl", "--campaign", "demo", "--out", str(out), stdout=io.StringIO())
    assert out.read_text(encoding="utf-8") == "".join(campaign_export_jsonl(campaign=demo_campaign))
    call_command("export_simpeval", "--campaign", "demo", "--format", "jsonl", "--out", str(out),
                 stdout=io.StringIO())
    assert out.read_text(encoding="utf-8") == "".join(campaign_export_jsonl(campaign=demo_campaign))


def test_jsonl_categories_count_only_the_judgements_the_selector_counts(make_user: Any) -> None:
    """An output's category in the JSONL comes from ``campaign_counted_judgements``' votes: an excluded
    annotator's and a superseded version's categories are listed with their annotations but never counted."""
    from annotation.models import Annotation, AnnotatorExclusion, OutputJudgement
    from annotation.rules import final_category
    from evaluation.selectors import campaign_counted_judgements
    from tests.factories import AnnotationFactory, campaign_with_outputs

    campaign = campaign_with_outputs(slug="votes", n_sources=1, systems=("Alpha",))
    output = campaign.sources.get().outputs.get()
    output.unit.auto_category = "paraphrase"  # breaks a deletion/paraphrase tie
    output.unit.save(update_fields=["auto_category"])
    counted, excluded_a, excluded_b = (make_user(name, "annotator") for name in ("kept", "gone1", "gone2"))
    for annotator in (excluded_a, excluded_b):
        AnnotatorExclusion.objects.create(campaign=campaign, annotator=annotator, reason="test")
    old = AnnotationFactory.create(source=output.source, annotator=counted, status=Annotation.Status.SUPERSEDED)
    new = AnnotationFactory.create(source=output.source, annotator=counted, version=2, previous=old)
    votes = [(old, "paraphrase"), (new, "deletion"), *((AnnotationFactory.create(
        source=output.source, annotator=a), "paraphrase") for a in (excluded_a, excluded_b))]
    for annotation, category in votes:
        OutputJudgement.objects.create(annotation=annotation, output=output, rating=50.0, category=category)

    assert list(campaign_counted_judgements(campaign).values_list("category", flat=True)) == ["deletion"]
    (line,) = campaign_export_jsonl(campaign=campaign)
    document = json.loads(line)
    assert [o["category"] for o in document["outputs"]] == [final_category(["deletion"], automatic="paraphrase")]
    assert document["outputs"][0]["category"] == "deletion"
    assert len(document["annotations"]) == 4 and sum(a["excluded"] for a in document["annotations"]) == 2
    assert {a["status"] for a in document["annotations"]} == {"submitted", "superseded"}
