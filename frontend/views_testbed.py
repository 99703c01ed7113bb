"""Research page of the perturbation testbed (APPLS): start a run on the worker, watch it, read its results.

A run is a ``testbed`` BackgroundJob; its progress streams over ``ws/testbed/<job id>/`` (named to the
page's script in data-* attributes) and its tables and figures are the files the testbed wrote.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from annotation.auth import request_user
from annotation.models import Corpus
from core.errors import ServiceError
from frontend.views_research import researcher_required
from metrics.perturb import REGISTRY
from metrics.perturb.testbed import SIMPLIFICATION_NOTE
from metrics.selectors import testbed_job_list_for
from metrics.services.testbed import parse_magnitudes, testbed_job_results, testbed_start


class TestbedForm(forms.Form):
    dataset = forms.ChoiceField(choices=())
    metrics = forms.CharField(initial="fkgl,bleu,gleu,sari,sari:lens,pomme",
                              help_text="comma-separated metric names, or all")
    magnitudes = forms.CharField(initial="0,10,...,100")
    sample = forms.IntegerField(min_value=1, initial=50)
    seed = forms.IntegerField(initial=0)
    rows = forms.CharField(required=False, help_text="START:END of the corpus, e.g. 1500:2000")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        names = list(Corpus.objects.values_list("name", flat=True))
        self.fields["dataset"].choices = [(n, n) for n in names]  # type: ignore[attr-defined]


@researcher_required
def testbed_index(request: HttpRequest) -> HttpResponse:
    form = TestbedForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = testbed_start(
                dataset=data["dataset"],
                metric_names=[n.strip() for n in data["metrics"].split(",") if n.strip()],
                magnitudes=parse_magnitudes(data["magnitudes"]),
                sample=data["sample"],
                seed=data["seed"],
                rows=data["rows"] or None,
                owner=request_user(request),
            )
        except ServiceError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Testbed run #{job.pk} queued.")
            return redirect("frontend:research-testbed-detail", job_id=job.pk)
    jobs = list(testbed_job_list_for(user=request_user(request))[:50])
    return render(request, "frontend/research/testbed_index.html",
                  {"form": form, "jobs": jobs, "note": SIMPLIFICATION_NOTE})


@require_GET
@researcher_required
def testbed_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = testbed_job_list_for(user=request_user(request)).filter(pk=job_id).first()
    if job is None:
        raise Http404("no such testbed run")
    results = testbed_job_results(job)
    order = list(REGISTRY)
    metrics = list(dict.fromkeys(row["metric"] for row in results["slopes"]))
    cells = {(row["metric"], row["perturbation"]): row for row in results["slopes"]}
    table = [
        {"perturbation": name, "criterion": REGISTRY[name].criterion,
         "cells": [cells.get((metric, name)) for metric in metrics]}
        for name in order
    ]
    # The SVGs are written by metrics.perturb.plots, which escapes every text it puts in them.
    plots = {name: mark_safe(svg) for name, svg in results["plots"].items()}
    return render(request, "frontend/research/testbed_detail.html", {
        "job": job, "params": results["params"], "metrics": metrics, "table": table, "plots": plots,
        "figure": mark_safe(results["figure"]),
        "summary": results["summary"], "note": SIMPLIFICATION_NOTE,
    })
