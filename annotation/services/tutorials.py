"""Tutorial gating: an annotator passes every tutorial source of a campaign before real work.

Tutorial answers are checked, never stored as annotations; a pass is stored as a `TutorialPass`, so
every interface (the pages, the REST API, scripts) sees the same gate. An annotator who has already
submitted real work in the campaign is never sent back to it (tutorials added later do not block them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from annotation.models import Assignment, Campaign, Category, RatingUnit, Source, TutorialPass, User
from core.errors import NotAllowed, ServiceError
from core.throttle import throttle_check


def tutorial_sources(*, campaign: Campaign) -> list[Source]:
    return list(campaign.sources.filter(is_tutorial=True).order_by("order", "id"))


def tutorial_passed_ids(*, campaign: Campaign, annotator: User, tutorials: Sequence[Source]) -> set[int]:
    """Ids of the `tutorials` the annotator has passed (all of them once they submitted real work)."""
    if not tutorials:
        return set()
    if Assignment.objects.filter(campaign=campaign, annotator=annotator, status=Assignment.Status.SUBMITTED).exists():
        return {s.pk for s in tutorials}
    return set(
        TutorialPass.objects.filter(annotator=annotator, source__in=tutorials).values_list("source_id", flat=True)
    )


def tutorial_pending(*, campaign: Campaign, annotator: User) -> list[Source]:
    """The tutorial sources the annotator still has to pass, in order."""
    tutorials = tutorial_sources(campaign=campaign)
    passed = tutorial_passed_ids(campaign=campaign, annotator=annotator, tutorials=tutorials)
    return [s for s in tutorials if s.pk not in passed]


def annotator_must_pass_tutorial(*, campaign: Campaign, annotator: User) -> None:
    """Raise NotAllowed (403) while the annotator has tutorial sources of `campaign` left to pass."""
    pending = tutorial_pending(campaign=campaign, annotator=annotator)
    if pending:
        raise NotAllowed(
            f"complete the tutorial of campaign '{campaign.slug}' before annotating "
            f"({len(pending)} practice sentence(s) left)",
            field="tutorial",
        )


def assignment_must_pass_tutorial(*, assignment: Assignment, user: User) -> None:
    """Raise NotAllowed (403, field ``tutorial``) when ``user`` opens their own unfinished assignment before
    passing the campaign's tutorial: the annotation page and the assignment API ask this one rule (a
    researcher reading an assignment of their campaign is not its annotator, and submitted work stays open)."""
    if assignment.annotator_id == user.pk and assignment.status != Assignment.Status.SUBMITTED:
        annotator_must_pass_tutorial(campaign=assignment.campaign, annotator=user)


def _key_to_units(source: Source, names: Sequence[Any]) -> list[set[int]]:
    """Map tutorial-key entries (system names or exact output texts) to rating-unit ids."""
    by_name: dict[str, set[int]] = {}
    for output in source.outputs.select_related("system"):
        by_name.setdefault(output.system.name, set()).add(output.unit_id)
        by_name.setdefault(output.text, set()).add(output.unit_id)
    return [by_name.get(str(name), set()) for name in names]


def _short(source: Source, unit_id: Any) -> str:
    text = RatingUnit.objects.filter(source=source, pk=unit_id).values_list("text", flat=True).first() or ""
    return text if len(text) <= 80 else text[:77] + "…"


def _answer_shape_ok(answer: Any) -> bool:
    """One answer of the page: an object whose output is named by an id or token and whose rank, when given,
    is a whole number (anything else cannot be compared with the key, so the answer is simply not done)."""
    if not isinstance(answer, dict):
        return False
    unit, rank = answer.get("unit"), answer.get("rank")
    return (isinstance(unit, int | str) and not isinstance(unit, bool)
            and (rank is None or (isinstance(rank, int) and not isinstance(rank, bool))))


def tutorial_problems(*, source: Source, units: Sequence[Any]) -> list[str]:
    """Problems with a tutorial answer; empty when it passes.

    `tutorial_key` may hold "ranking" (system names or output texts, best first: the annotator's
    best and worst must match its first and last entries) and "categories" ({name: category}).
    """
    key = source.tutorial_key or {}
    if not units or any(not _answer_shape_ok(u) for u in units):
        return ["Rate and rank every output first."]
    answers: list[dict[str, Any]] = list(units)
    ranked = sorted(answers, key=lambda u: u.get("rank") or 0)
    problems = []
    ranking = key.get("ranking") or []
    if len(ranking) >= 2:
        best, worst = _key_to_units(source, [ranking[0], ranking[-1]])
        if ranked[0].get("unit") not in best:
            problems.append("The output you ranked first is not the best one. Look again at meaning and fluency.")
        if ranked[-1].get("unit") not in worst:
            problems.append("The output you ranked last is not the worst one.")
    for name, category in (key.get("categories") or {}).items():
        wanted = _key_to_units(source, [name])[0]
        for u in answers:
            if u.get("unit") in wanted and u.get("category") != category:
                label = Category(category).label if category in Category.values else category
                problems.append(f"One output belongs in the {label} group: “{_short(source, u['unit'])}”.")
    return problems


@transaction.atomic
def tutorial_answer_check(*, source: Source, annotator: User, units: Sequence[Any]) -> list[str]:
    """Check an answer to a tutorial source; a correct one is remembered. Returns the problems found.

    Each check counts against the annotator's tries at this practice sentence (the ``tutorial`` rate); past
    it, `core.throttle.Throttled` (429) says when to try again."""
    if not source.is_tutorial:
        raise NotAllowed("this source is not a tutorial", field="source")
    throttle_check("tutorial", f"{annotator.pk}:{source.pk}", what="tries at this practice sentence",
                   field="tutorial")
    problems = tutorial_problems(source=source, units=units)
    if not problems:
        TutorialPass.objects.get_or_create(annotator=annotator, source=source)
    return problems


# --- Practice sentences, as a researcher sets them ---------------------------------------------------------

TUTORIAL_KEY_FIELDS = ("ranking", "categories")


def tutorial_key_check(*, source: Source, key: Any) -> dict[str, Any]:
    """A practice sentence's expected answer in the format `tutorial_problems` reads, checked against the
    source's outputs; the one check of the research page, the admin and the API.

    ``{"ranking": [name, ...], "categories": {name: category}}``, each name a system of the source (or an
    output's exact text): ``ranking`` best first, naming at least two different outputs (the answer's best
    and worst are compared with its first and last); ``categories`` one of `Category` each.

    Raises:
        ServiceError: naming the field (``ranking``/``categories``/``tutorial_key``) and the bad entry.
    """
    if not isinstance(key, dict):
        raise ServiceError("the expected answer is an object with ranking and categories", field="tutorial_key")
    unknown = sorted(set(key) - set(TUTORIAL_KEY_FIELDS))
    if unknown:
        raise ServiceError(f"unknown part(s) of the expected answer: {', '.join(map(str, unknown))} (known: "
                           f"{', '.join(TUTORIAL_KEY_FIELDS)})", field="tutorial_key")
    names: set[str] = set()
    for system, text in source.outputs.values_list("system__name", "text"):
        names.update((system, text))
    ranking = key.get("ranking") or []
    categories = key.get("categories") or {}
    if not isinstance(ranking, list) or not all(isinstance(n, str) for n in ranking):
        raise ServiceError("ranking is a list of system names, best first", field="ranking")
    if ranking:
        missing = [n for n in ranking if n not in names]
        if missing:
            raise ServiceError(f"ranking names {missing[0]!r}, which is no output of source "
                               f"{source.external_id!r}", field="ranking")
        if len(set(ranking)) != len(ranking):
            raise ServiceError("ranking names an output twice", field="ranking")
        if len(ranking) < 2:
            raise ServiceError("rank at least two outputs (the best and the worst are checked)", field="ranking")
    if not isinstance(categories, dict):
        raise ServiceError("categories map system names to a group", field="categories")
    for name, category in categories.items():
        if name not in names:
            raise ServiceError(f"categories name {name!r}, which is no output of source {source.external_id!r}",
                               field="categories")
        if category not in Category.values:
            raise ServiceError(f"{name}: the group must be one of {', '.join(Category.values)} (got {category!r})",
                               field="categories")
    if not ranking and not categories:
        raise ServiceError("give an expected ranking or groups: a practice sentence with no expected answer "
                           "passes any answer", field="ranking")
    return {k: v for k, v in (("ranking", list(ranking)), ("categories", dict(categories))) if v}

