"""Research page of the study planner: "how many sources and raters do I need" for a target, by simulation
from a pilot (a campaign's ratings or a released study).

Every field is checked by the function the API uses (``evaluation.services.stoprule.plan_request_parse`` and
``planner_pilot``), and each error is shown next to its field. The simulation is bounded to a few seconds
(``evaluation.allocation.planner.WORK_MAX``), so it runs in the request.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotation.auth import request_user
from annotation.selectors import CampaignPurpose, campaign_list_visible
from core.errors import ServiceError
from evaluation.services.stoprule import plan_request_parse, planner_defaults, planner_pilot, study_plan
from frontend.views_research import researcher_required

CAMPAIGNS_LISTED = 500


class PlannerForm(forms.Form):
    campaign = forms.ChoiceField(choices=(), required=False, label="Pilot: a campaign's ratings")
    dataset = forms.ChoiceField(choices=(), required=False, label="or a similar released study")
    # Short choices: a dropdown shows its choice on one line, cut at the screen's edge on a phone.
    target = forms.ChoiceField(choices=(("top_k", "top-k right, with probability p"),
                                        ("alpha", "α interval narrower than w")), initial="top_k",
                               help_text="top-k: the k best systems right (as a set) in a share p of the simulated "
                                         "studies; α: the 95% interval of Krippendorff's α narrower than w")
    k = forms.CharField(initial="1", required=False, label="k (top-k)",
                        help_text="top-k: how many top systems must be right (a set)")
    p = forms.CharField(initial="0.9", required=False, label="p (probability)",
                        help_text="top-k: the probability wanted (0.5 to below 1)")
    w = forms.CharField(initial="0.1", required=False, label="w (α interval width)",
                        help_text="α: the 95% interval's width wanted")
    sources = forms.CharField(required=False,
                              help_text="numbers of sources to try, comma-separated")
    raters = forms.CharField(required=False,
                             help_text="raters per source to try, comma-separated")
    sims = forms.CharField(required=False, label="Simulations", help_text="simulated studies per size")
    seed = forms.CharField(initial="0", required=False,
                           help_text="of the random draws: the same seed and fields give the same plan")

    def __init__(self, *args: Any, campaigns: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["campaign"].choices = [("", "none"), *((c, c) for c in campaigns)]  # type: ignore[attr-defined]
        defaults = planner_defaults()
        self.fields["dataset"].choices = [("", "none"), *defaults["released"].items()]  # type: ignore[attr-defined]
        self.fields["sources"].initial = ", ".join(map(str, defaults["sources"]))
        self.fields["raters"].initial = ", ".join(map(str, defaults["raters"]))
        self.fields["sims"].initial = str(defaults["sims"])


@researcher_required
def planner_view(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    campaigns = list(campaign_list_visible(user=user, purpose=CampaignPurpose.MANAGE)
                     .order_by("slug").values_list("slug", flat=True)[:CAMPAIGNS_LISTED])
    data = request.POST if request.method == "POST" else None
    initial = {"campaign": request.GET.get("campaign", "")} if data is None else None
    form = PlannerForm(data, initial=initial, campaigns=campaigns)
    result = None
    status = 200
    if data is not None:
        status = 400
        if form.is_valid():
            try:
                plan_request = plan_request_parse(form.cleaned_data)
                pilot = planner_pilot(user=user, campaign=form.cleaned_data["campaign"],
                                      dataset=form.cleaned_data["dataset"])
                result = study_plan(pilot=pilot, request=plan_request)
                status = 200
            except ServiceError as exc:
                field = "campaign" if exc.field == "pilot" else exc.field
                form.add_error(field if field in form.fields else None, exc.reason)
                status = exc.status
    chosen = (data or request.GET).get("campaign", "")
    back = chosen if chosen in campaigns else ""  # the pilot campaign's dashboard, to go back to
    return render(request, "frontend/research/planner.html", {"form": form, "result": result, "back": back},
                  status=status)
