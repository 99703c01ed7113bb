"""Research page of the perturbation testbed (APPLS): import a corpus, start a run on the worker, watch it,
read its results.

A run is a ``testbed`` BackgroundJob; its progress streams over ``ws/testbed/<job id>/`` (named to the
page's script in data-* attributes) and its tables and figures are the files the testbed wrote. Every field
is checked by the function the command and the service use (``core.budgets``, ``metrics.services.testbed``,
``annotation.services.corpora``), and each error is shown next to its field, all at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from annotation.auth import request_user
from annotation.models import Corpus
from annotation.services.corpora import corpus_import
from core.budgets import sample_check, seed_check
from core.errors import ServiceError
from frontend.views_research import MultipleFileField, researcher_required
from metrics.perturb import REGISTRY
from metrics.perturb.sanity import SANITY_TOLERANCE, sanity_table
from metrics.perturb.testbed import SIMPLIFICATION_NOTE, skipped_rows
from metrics.selectors import testbed_job_list_for
from metrics.services.testbed import (
    parse_magnitudes,
    parse_rows,
    perturbation_metrics_check,
    testbed_job_results,
    testbed_start,
)

T = TypeVar("T")


def _checked(form: forms.Form, name: str, check: Callable[..., T], *args: Any) -> T | None:
    """``check(*args)``; a ServiceError becomes a form error on its own field (else on ``name``), in the
    page's words (``ServiceError.reason``)."""
    try:
        return check(*args)
    except ServiceError as exc:
        form.add_error(exc.field if exc.field in form.fields else name, exc.reason)
        return None


class TestbedForm(forms.Form):
    dataset = forms.ChoiceField(choices=(), label="Corpus")
    metrics = forms.CharField(initial="fkgl,bleu,gleu,sari,sari:lens,pomme",
                              help_text="comma-separated metric names, or all")
    magnitudes = forms.CharField(initial="0,10,...,100", help_text="percentages: a list, or 0,10,...,100")
    sample = forms.IntegerField(initial=50, help_text="sources drawn from the corpus")
    seed = forms.IntegerField(initial=0)
    rows = forms.CharField(required=False, help_text="START:END of the corpus, e.g. 1500:2000")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        names = list(Corpus.objects.values_list("name", flat=True))
        self.fields["dataset"].choices = [(n, n) for n in names]  # type: ignore[attr-defined]

    def clean_metrics(self) -> list[str]:
        names = [n.strip() for n in self.cleaned_data["metrics"].split(",") if n.strip()]
        _checked(self, "metrics", perturbation_metrics_check, names)
        return names

    def clean_magnitudes(self) -> list[float] | None:
        return _checked(self, "magnitudes", parse_magnitudes, self.cleaned_data["magnitudes"])

    def clean_sample(self) -> int | None:
        return _checked(self, "sample", sample_check, self.cleaned_data["sample"])

    def clean_seed(self) -> int | None:
        return _checked(self, "seed", seed_check, self.cleaned_data["seed"])

    def clean(self) -> dict[str, Any] | None:
        data = super().clean()
        if data is None:
            return None
        corpus = Corpus.objects.filter(name=data.get("dataset") or "").first()
        if corpus is not None and data.get("rows"):
            _checked(self, "rows", parse_rows, data["rows"], corpus.items.count())
        return data


class CorpusForm(forms.Form):
    """A corpus from the page: what ``manage.py import_corpus --name NAME ORIG SIMP...`` takes."""

    name = forms.CharField(max_length=100, label="Name", help_text="letters, digits, - and _ (e.g. asset-valid)")
    source = forms.FileField(label="Sources", help_text="one source sentence per line (e.g. asset.valid.orig)")
    references = MultipleFileField(label="References",
                                   help_text="one or more files line-aligned with the sources, one reference a line "
                                             "(e.g. asset.valid.simp.0 … .9; choose them all at once)")


def _page(request: HttpRequest, form: TestbedForm, corpus_form: CorpusForm, status: int = 200) -> HttpResponse:
    jobs = list(testbed_job_list_for(user=request_user(request))[:50])
    return render(request, "frontend/research/testbed_index.html",
                  {"form": form, "corpus_form": corpus_form, "jobs": jobs, "note": SIMPLIFICATION_NOTE,
                   "corpora": list(Corpus.objects.order_by("name"))}, status=status)


@researcher_required
def testbed_index(request: HttpRequest) -> HttpResponse:
    form = TestbedForm(request.POST or None)
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                job = testbed_start(dataset=data["dataset"], metric_names=data["metrics"],
                                    magnitudes=data["magnitudes"], sample=data["sample"], seed=data["seed"],
                                    rows=data["rows"] or None, owner=request_user(request))
            except ServiceError as exc:
                form.add_error(exc.field if exc.field in form.fields else None, exc.reason)
                status = exc.status  # the job caps' 429 and 409 stay what they are
            else:
                messages.success(request, f"Testbed run #{job.pk} queued.")
                return redirect("frontend:research-testbed-detail", job_id=job.pk)
        return _page(request, form, CorpusForm(), status=status)
    return _page(request, form, CorpusForm())


@require_POST
@researcher_required
def testbed_corpus_view(request: HttpRequest) -> HttpResponse:
    """POST: import a corpus (the service of ``manage.py import_corpus``); errors next to their fields."""
    corpus_form = CorpusForm(request.POST, request.FILES)
    status = 400
    if corpus_form.is_valid():
        data = corpus_form.cleaned_data
        try:
            corpus = corpus_import(name=data["name"].strip(), source_file=data["source"],
                                   source_filename=data["source"].name,
                                   reference_files=[(f, f.name) for f in data["references"]])
        except ServiceError as exc:
            corpus_form.add_error(exc.field if exc.field in corpus_form.fields else None, exc.reason)
            status = exc.status
        else:
            messages.success(request, f"Corpus {corpus.name} imported: {corpus.items.count()} sources, "
                                      f"{len(data['references'])} reference file(s).")
            return redirect("frontend:research-testbed")
    return _page(request, TestbedForm(), corpus_form, status=status)


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
        "skipped": skipped_rows(results["summary"].get("skipped_no_eligible_span") or {}),
        "summary": results["summary"], "note": SIMPLIFICATION_NOTE,
        "sanity": sanity_table(results["summary"].get("sanity") or {}), "sanity_tolerance": SANITY_TOLERANCE,
    })
