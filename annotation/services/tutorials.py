"""Tutorial gating: an annotator passes every tutorial source of a campaign before real work.

Tutorial answers are checked, never stored as annotations; a pass is stored as a `TutorialPass`, so
every interface (the pages, the REST API, scripts) sees the same gate. An annotator who has already
submitted real work in the campaign is never sent back to it (tutorials added later do not block them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction

from annotation.models import Assignment, Campaign, Category, RatingUnit, Source, TutorialPass, User
from annotation.rules import ORDER_CONTRADICTION_POINTS
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


PRACTICE_SCORE_GAP = 20
"""On a practice sentence the best output (first of the key's ranking) must score at least this many points more
than the worst (its last): scores that do not tell them apart (every output 50, say) do not pass."""

PRACTICE_SCORE_TOLERANCE = 25
"""How far a score may be from the key's expected score for that output ("ratings"): one anchor step."""


def _is_rating(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 100


def _answer_shape_ok(answer: Any) -> bool:
    """One answer of the page: an object whose output is named by an id or token, with a whole-number rank and
    a rating from 0 to 100 (anything else cannot be compared with the key, so the answer is simply not done)."""
    if not isinstance(answer, dict):
        return False
    unit, rank = answer.get("unit"), answer.get("rank")
    return (isinstance(unit, int | str) and not isinstance(unit, bool)
            and isinstance(rank, int) and not isinstance(rank, bool) and _is_rating(answer.get("rating")))


def tutorial_problems(*, source: Source, units: Sequence[Any]) -> list[str]:
    """Problems with a practice (tutorial) answer; empty when it passes. The one judge of practice answers, for
    the page and every other client (through `tutorial_answer_check`).

    The answer must rank and rate every output of the sentence once. `tutorial_key` may hold:

    - "ranking": system names or output texts, best first. The annotator's first and last must be its first and
      last; two outputs two or more places apart in it must keep their order (neighbours in it may swap, as
      outputs of close quality can); the best must score at least ``PRACTICE_SCORE_GAP`` points above the worst,
      and no output of it may score more than ``ORDER_CONTRADICTION_POINTS`` below one the key puts lower.
    - "ratings": {name: expected score}: each score must be within ``PRACTICE_SCORE_TOLERANCE`` of it.
    - "categories": {name: category}: the group each named output belongs in.
    """
    key = source.tutorial_key or {}
    expected = set(RatingUnit.objects.filter(source=source).values_list("pk", flat=True))
    if (not units or any(not _answer_shape_ok(u) for u in units)
            or sorted(u["unit"] for u in units if isinstance(u["unit"], int)) != sorted(expected)):
        return ["Rank and rate every output first (a score from 0 to 100 for each)."]
    answers: list[dict[str, Any]] = list(units)
    ranked = [u["unit"] for u in sorted(answers, key=lambda u: u["rank"])]
    rating = {u["unit"]: float(u["rating"]) for u in answers}
    problems = []
    names = [str(name) for name in key.get("ranking") or []]
    keyed = list(zip(names, _key_to_units(source, names), strict=True))
    if len(keyed) >= 2:
        (_, best), (_, worst) = keyed[0], keyed[-1]
        if ranked[0] not in best:
            problems.append("The output you ranked first is not the best one. Look again at meaning and fluency.")
        if ranked[-1] not in worst:
            problems.append("The output you ranked last is not the worst one.")
        place = {unit: i for i, unit in enumerate(ranked)}
        # One answered output per key entry (an entry naming several identical outputs: the best placed one).
        chosen = [(name, min(ids & place.keys(), key=place.__getitem__)) for name, ids in keyed if ids & place.keys()]
        for i, (_, high) in enumerate(chosen):
            for _, low in chosen[i + 2:]:
                if place[high] > place[low]:
                    problems.append(f"“{_short(source, high)}” should rank above “{_short(source, low)}”.")
        for i, (_, high) in enumerate(chosen):
            for _, low in chosen[i + 1:]:
                if rating[low] - rating[high] > ORDER_CONTRADICTION_POINTS:
                    problems.append(f"“{_short(source, low)}” scores {rating[low]:g}, more than "
                                    f"“{_short(source, high)}” ({rating[high]:g}), which is better.")
        if len(chosen) >= 2 and rating[chosen[0][1]] - rating[chosen[-1][1]] < PRACTICE_SCORE_GAP:
            problems.append(f"Your scores hardly tell the best output from the worst ({rating[chosen[0][1]]:g} and "
                            f"{rating[chosen[-1][1]]:g}): give each the score its quality deserves.")
    for name, score in (key.get("ratings") or {}).items():
        if not _is_rating(score):
            continue
        for unit in _key_to_units(source, [name])[0] & rating.keys():
            if abs(rating[unit] - score) > PRACTICE_SCORE_TOLERANCE:
                problems.append(f"“{_short(source, unit)}” deserves about {score:g}; you gave {rating[unit]:g}.")
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

def _one_output_agrees(source: Source, expected: dict[str, Any], *, field: str,
                       differ: Callable[[Any, Any], bool]) -> None:
    """Refuse expectations that two names of one output (systems with the same text: one rating unit, one
    answer) give that no answer can meet at once."""
    seen: dict[int, tuple[str, Any]] = {}
    for (name, value), units in zip(expected.items(), _key_to_units(source, list(expected)), strict=True):
        for unit in units:
            if unit in seen and differ(seen[unit][1], value):
                raise ServiceError(f"{field}: {seen[unit][0]!r} and {name!r} have the same text (one output) but "
                                   f"expect {seen[unit][1]!r} and {value!r}, which no answer meets at once",
                                   field=field)
            seen.setdefault(unit, (name, value))


TUTORIAL_KEY_FIELDS = ("ranking", "ratings", "categories")


def _expected_score_check(name: str, score: Any) -> None:
    """Refuse an expected score of a key's "ratings" that is no finite number from 0 to 100 (a bool, text, NaN)."""
    # NaN and the infinities fail the range test too (and a huge int is compared without becoming a float).
    if not isinstance(score, int | float) or isinstance(score, bool) or not 0 <= score <= 100:
        reason = f"an expected score is a number from 0 to 100 (got {repr(score)[:40]})"
        raise ServiceError(f"ratings: {name}: {reason}", field="ratings", details={"entry": name},
                           reason=reason[0].upper() + reason[1:] + ".")


def tutorial_key_check(*, source: Source, key: Any) -> dict[str, Any]:
    """A practice sentence's expected answer in the format `tutorial_problems` reads, checked against the
    source's outputs; the one check of the research page, the admin and the API.

    ``{"ranking": [name, ...], "ratings": {name: score}, "categories": {name: category}}``, each part optional
    but not all empty, each name a system of the source (or an output's exact text): ``ranking`` best first,
    naming at least two different outputs (the answer's best and worst are compared with its first and last);
    ``ratings`` the score expected of an output, a number from 0 to 100 (met within
    ``PRACTICE_SCORE_TOLERANCE``), never lower for an output the ranking puts above another; ``categories``
    one of `Category` each.

    Raises:
        ServiceError: naming the field (``ranking``/``ratings``/``categories``/``tutorial_key``) and the bad
        entry (for ``ratings`` also as ``details["entry"]``, so a page can show it beside that output).
    """
    if not isinstance(key, dict):
        raise ServiceError("the expected answer is an object with ranking, ratings and categories",
                           field="tutorial_key")
    unknown = sorted(set(key) - set(TUTORIAL_KEY_FIELDS))
    if unknown:
        raise ServiceError(f"unknown part(s) of the expected answer: {', '.join(map(str, unknown))} (known: "
                           f"{', '.join(TUTORIAL_KEY_FIELDS)})", field="tutorial_key")
    names: set[str] = set()
    for system, text in source.outputs.values_list("system__name", "text"):
        names.update((system, text))
    ranking = key.get("ranking") or []
    ratings = key.get("ratings") or {}
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
        # Systems whose outputs have the same text are one output to rank (one rating unit): naming both would
        # ask for one output in two places (as best and worst, an answer nobody can give).
        seen: dict[int, str] = {}
        for name, units in zip(ranking, _key_to_units(source, ranking), strict=True):
            same = next((seen[unit] for unit in units if unit in seen), None)
            if same is not None:
                raise ServiceError(f"ranking names {same!r} and {name!r}, which have the same text: one output to "
                                   "rank, so name only one of them", field="ranking")
            seen.update(dict.fromkeys(units, name))
        if len(ranking) < 2:
            raise ServiceError("rank at least two outputs (the best and the worst are checked)", field="ranking")
    if not isinstance(ratings, dict):
        raise ServiceError("ratings map system names to the score expected (0 to 100)", field="ratings")
    for name, score in ratings.items():
        if name not in names:
            raise ServiceError(f"ratings name {name!r}, which is no output of source {source.external_id!r}",
                               field="ratings", details={"entry": name},
                               reason="This is no output of the source.")
        _expected_score_check(name, score)
    scored = [(name, ratings[name]) for name in ranking if name in ratings]
    for i, (high, high_score) in enumerate(scored):
        for low, low_score in scored[i + 1:]:
            if low_score > high_score:
                raise ServiceError(f"ratings: {low} is expected to score {low_score:g}, more than {high} "
                                   f"({high_score:g}), which the ranking puts above it", field="ratings",
                                   details={"entry": low},
                                   reason=f"More than {high} ({high_score:g}), which is ranked above it.")
    if not isinstance(categories, dict):
        raise ServiceError("categories map system names to a group", field="categories")
    for name, category in categories.items():
        if name not in names:
            raise ServiceError(f"categories name {name!r}, which is no output of source {source.external_id!r}",
                               field="categories")
        if category not in Category.values:
            raise ServiceError(f"{name}: the group must be one of {', '.join(Category.values)} (got {category!r})",
                               field="categories")
    _one_output_agrees(source, categories, field="categories", differ=lambda a, b: a != b)
    _one_output_agrees(source, ratings, field="ratings",
                       differ=lambda a, b: abs(float(a) - float(b)) > 2 * PRACTICE_SCORE_TOLERANCE)
    if not ranking and not ratings and not categories:
        raise ServiceError("give an expected ranking, scores or groups: a practice sentence with no expected "
                           "answer passes any answer", field="ranking")
    return {k: v for k, v in (("ranking", list(ranking)), ("ratings", dict(ratings)),
                              ("categories", dict(categories))) if v}
