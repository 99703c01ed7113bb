"""Research page of a campaign's allocation simulations (issue 45): start one on the worker, watch it, read it.

A simulation is an ``allocation`` BackgroundJob about the campaign; its progress reaches the page over the
campaign's live feed (``ws/campaigns/<slug>/``, the job's ``job.progress`` events; the page rereads itself
while the socket is not live). Every field is checked by the function the command and the API use
(``metrics.services.allocation.allocation_request_check``), and an error is shown next to its field.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from annotation.auth import request_user
from annotation.models import Campaign
from annotation.selectors import CampaignPurpose, campaign_get_visible
from core.errors import ServiceError
from frontend.views_research import researcher_required
from metrics.selectors import allocation_job_list
from metrics.services.allocation import (
    ALWAYS_POLICIES,
    SEEDS_MAX,
    allocation_job_result,
    campaign_allocation_start,
    campaign_counted_ratings,
)

JOBS_SHOWN = 50


def policy_choices() -> list[tuple[str, str]]:
    """Every policy of the simulator (imported when a form is built: its policies import scipy)."""
    from evaluation.allocation.policies import METRIC_POLICIES, POLICIES, POLICY_DESCRIPTIONS

    return [(name, f"{name}: {POLICY_DESCRIPTIONS[name]}"
                   f"{' (needs the campaign scored with metrics)' if name in METRIC_POLICIES else ''}")
            for name in POLICIES]


class AllocationForm(forms.Form):
    policy = forms.MultipleChoiceField(
        choices=policy_choices, required=False, widget=forms.CheckboxSelectMultiple,
        label="Policies", help_text=f"{' and '.join(ALWAYS_POLICIES)} always run; tick others to compare")
    seeds = forms.IntegerField(initial=50, label="Seeds", help_text=f"simulated campaigns per policy, 1 to {SEEDS_MAX}")
    budget = forms.IntegerField(required=False, label="Budget",
                                help_text="ratings each simulated campaign may reveal (empty: all)")


def _page(request: HttpRequest, campaign: Campaign, form: AllocationForm, status: int = 200) -> HttpResponse:
    return render(request, "frontend/research/allocation.html", {
        "campaign": campaign, "form": form, "jobs": list(allocation_job_list(campaign)[:JOBS_SHOWN]),
        "ratings": campaign_counted_ratings(campaign),
    }, status=status)


@researcher_required
def campaign_allocation_view(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the form and the campaign's simulations; POST: start one (errors next to their fields)."""
    campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
    if request.method != "POST":
        return _page(request, campaign, AllocationForm(initial={"policy": list(ALWAYS_POLICIES)}))
    form = AllocationForm(request.POST)
    status = 400
    if form.is_valid():
        data = form.cleaned_data
        try:
            job = campaign_allocation_start(campaign, policies=data["policy"], seeds=data["seeds"],
                                            budget=data["budget"], owner=request_user(request))
        except ServiceError as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.reason)
            status = exc.status  # the job caps' 429 and 409 stay what they are
        else:
            messages.success(request, f"Simulation #{job.pk} queued.")
            return redirect("frontend:research-allocation-detail", slug=campaign.slug, job_id=job.pk)
    return _page(request, campaign, form, status=status)


@require_GET
@researcher_required
def campaign_allocation_detail(request: HttpRequest, slug: str, job_id: int) -> HttpResponse:
    campaign = campaign_get_visible(user=request_user(request), slug=slug, purpose=CampaignPurpose.MANAGE)
    job = get_object_or_404(allocation_job_list(campaign), pk=job_id)
    result = allocation_job_result(job)
    # The SVG is written by evaluation.allocation.plot, which escapes every text it puts in it.
    svg = mark_safe(result["svg"]) if result["svg"] else ""
    return render(request, "frontend/research/allocation_detail.html", {
        "campaign": campaign, "job": job, "result": result, "svg": svg,
        "rows": [{**row, "top1": [row["top1_accuracy"][k] for k in ("0.1", "0.2", "0.3", "0.5")]}
                 for row in result["summary"] or []],
        "summary_url": reverse("campaign-allocation-summary", kwargs={"slug": campaign.slug, "job_id": job.pk}),
        "ws": f"/ws/campaigns/{campaign.slug}/",
    })
