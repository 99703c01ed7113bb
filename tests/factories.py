"""Test data builders, shared by every test package through the fixtures in tests/conftest.py.

factory_boy factories for the rows (people, campaigns, sources with references, systems, outputs with
their rating units, submitted annotations with judgements, LENS versions), and a few builders on top:
a rated campaign for LENS training and a submission through the annotation service. The tiny test
encoder and its pure LENS samples are in tests/tiny.py, which needs no Django. Test modules import from
these two (or take the fixtures), never from each other.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.test import Client
from factory.declarations import (
    LazyAttribute,
    LazyFunction,
    PostGeneration,
    PostGenerationMethodCall,
    SelfAttribute,
    SubFactory,
)
from factory.declarations import (
    Sequence as Seq,
)
from factory.django import DjangoModelFactory

from annotation.models import (
    Annotation,
    Assignment,
    Campaign,
    Output,
    OutputJudgement,
    RatingUnit,
    Reference,
    Source,
    System,
    User,
)
from metrics.models import LearnedVersion
from tests.tiny import sentence

if TYPE_CHECKING:
    from evaluation.stats.records import RatingRecord

PASSWORD = "pw-for-tests-1"


def login(user: User) -> Client:
    """A Django test client signed in as ``user`` (no password, no lock-out: ``force_login``)."""
    client = Client()
    client.force_login(user)
    return client


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- Rows -------------------------------------------------------------------------------------------------


class UserFactory(DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = Seq(lambda n: f"user{n}")
    role = User.Role.ANNOTATOR
    password = PostGenerationMethodCall("set_password", PASSWORD)

    @PostGeneration
    def staff_for_admins(obj: User, create: bool, extracted: object, **kwargs: object) -> None:
        """Admins are Django staff and superusers (the admin site and its actions)."""
        if obj.role == User.Role.ADMIN:
            obj.is_staff = obj.is_superuser = True
        if create:
            obj.save()


class AnnotatorFactory(UserFactory):
    username = Seq(lambda n: f"ann{n}")
    role = User.Role.ANNOTATOR


class ResearcherFactory(UserFactory):
    username = Seq(lambda n: f"res{n}")
    role = User.Role.RESEARCHER


class AdminFactory(UserFactory):
    username = Seq(lambda n: f"admin{n}")
    role = User.Role.ADMIN


class CampaignFactory(DjangoModelFactory[Campaign]):
    class Meta:
        model = Campaign
        django_get_or_create = ("slug",)
        skip_postgeneration_save = True

    name = Seq(lambda n: f"Campaign {n}")
    slug = Seq(lambda n: f"campaign-{n}")

    @PostGeneration
    def owners(obj: Campaign, create: bool, extracted: Sequence[User] | None, **kwargs: object) -> None:
        if create and extracted:
            obj.owners.add(*extracted)


class SourceFactory(DjangoModelFactory[Source]):
    class Meta:
        model = Source

    campaign = SubFactory(CampaignFactory)
    external_id = Seq(lambda n: f"s{n}")
    text = Seq(lambda n: f"The complex sentence number {n} is rather long and winding.")
    order = Seq(lambda n: n)


class ReferenceFactory(DjangoModelFactory[Reference]):
    class Meta:
        model = Reference

    source = SubFactory(SourceFactory)
    text = Seq(lambda n: f"A simple reference {n}.")
    position = 0


class SystemFactory(DjangoModelFactory[System]):
    class Meta:
        model = System
        django_get_or_create = ("campaign", "name")

    campaign = SubFactory(CampaignFactory)
    name = Seq(lambda n: f"System {n}")


class RatingUnitFactory(DjangoModelFactory[RatingUnit]):
    """A distinct output text of a source; outputs with the same text share it."""

    class Meta:
        model = RatingUnit
        django_get_or_create = ("source", "text_key")

    source = SubFactory(SourceFactory)
    text = Seq(lambda n: f"A simpler sentence {n}.")
    text_key = LazyAttribute(lambda unit: text_key(unit.text))


class OutputFactory(DjangoModelFactory[Output]):
    class Meta:
        model = Output

    source = SubFactory(SourceFactory)
    system = SubFactory(SystemFactory, campaign=SelfAttribute("..source.campaign"))
    text = Seq(lambda n: f"A simpler sentence {n}.")
    unit = SubFactory(RatingUnitFactory, source=SelfAttribute("..source"),
                              text=SelfAttribute("..text"))
    row_index = Seq(lambda n: n)


class AnnotationFactory(DjangoModelFactory[Annotation]):
    """A submitted annotation of a source (no assignment: as imported or written by a script)."""

    class Meta:
        model = Annotation

    source = SubFactory(SourceFactory)
    annotator = SubFactory(AnnotatorFactory)
    status = Annotation.Status.SUBMITTED


class OutputJudgementFactory(DjangoModelFactory[OutputJudgement]):
    class Meta:
        model = OutputJudgement

    annotation = SubFactory(AnnotationFactory)
    output = SubFactory(OutputFactory, source=SelfAttribute("..annotation.source"))
    rating = 50.0


class LearnedVersionFactory(DjangoModelFactory[LearnedVersion]):
    """A LENS version whose training succeeded (pass `checkpoint_path`, e.g. the tiny checkpoint)."""

    class Meta:
        model = LearnedVersion

    status = LearnedVersion.Status.SUCCEEDED
    encoder = "tiny"
    checkpoint_path = ""
    heldout_results = LazyFunction(lambda: {"tau": {"all": 0.5}, "pearson": 0.6, "loss": 0.4})


def succeeded_version(checkpoint: Path, **fields: Any) -> LearnedVersion:
    """A succeeded LENS version serving `checkpoint`."""
    return LearnedVersionFactory.create(checkpoint_path=str(checkpoint), **fields)


# --- Builders ---------------------------------------------------------------------------------------------


def campaign_with_outputs(
    *, n_sources: int = 2, systems: Sequence[str] = ("Alpha", "Beta", "Gamma"), n_references: int = 1,
    **fields: Any,
) -> Campaign:
    """A campaign whose every source has references and one output per system (one rating unit each)."""
    campaign = CampaignFactory.create(**fields)
    rows = [SystemFactory.create(campaign=campaign, name=name) for name in systems]
    for s in range(n_sources):
        source = SourceFactory.create(campaign=campaign, external_id=f"s{s}", order=s)
        for position in range(n_references):
            ReferenceFactory.create(source=source, position=position)
        for row_index, system in enumerate(rows):
            OutputFactory.create(source=source, system=system, row_index=row_index,
                          text=f"{system.name} simplifies source {s}.")
    return campaign


def public_id(assignment: Assignment, unit_id: int) -> str:
    """The opaque id the annotator of `assignment` sees for a rating unit (annotation.blinding)."""
    from annotation.blinding import assignment_scope, unit_token

    return unit_token(scope=assignment_scope(assignment.pk), unit_id=unit_id)


def tutorial_public_id(annotator: User, source: Source, unit_id: int) -> str:
    """The opaque id an annotator sees for a rating unit of a tutorial source."""
    from annotation.blinding import tutorial_scope, unit_token

    return unit_token(scope=tutorial_scope(annotator_id=annotator.pk, source_id=source.pk), unit_id=unit_id)


# What the annotation page sends when steps 1 and 2 were opened (annotation.payloads).
STEPS_REVIEWED = {"categorise": "visited", "edits": "visited"}


def submit_assignment(
    assignment: Assignment, *, ratings: Mapping[int, float] | None = None, category: str = "paraphrase",
    submit_key: str = "k",
) -> Annotation:
    """Submit the assignment through the annotation service: every unit rated (50 unless `ratings` by unit
    id says otherwise) and ranked in the order of its id."""
    from annotation.services.annotations import annotation_submit

    units = RatingUnit.objects.filter(source=assignment.source).order_by("id")
    items = [
        {"unit": public_id(assignment, unit.pk), "category": category, "rating": (ratings or {}).get(unit.pk, 50),
         "rank": i + 1}
        for i, unit in enumerate(units)
    ]
    return annotation_submit(assignment=assignment, user=assignment.annotator, submit_key=submit_key,
                             payload={"steps_reviewed": STEPS_REVIEWED, "units": items})


def submit_like_a_rater(
    assignment: Assignment, *, careless: bool, rng: random.Random, quality: Mapping[str, float], spread: float,
    step_seconds: Mapping[str, float], careless_attention: tuple[int, int] = (0, 100),
) -> Annotation:
    """Submit the assignment as a careful rater would (each system's `quality` with Gaussian noise of sd
    `spread`; attention items near 0) or as a careless one (uniform random scores; attention items uniform
    in `careless_attention`), then record the given seconds per step: the ratings the quality-control
    verdicts are tested on."""
    ratings = {}
    for unit in RatingUnit.objects.filter(source=assignment.source):
        output = unit.outputs.select_related("system").first()
        assert output is not None
        if careless:
            low, high = careless_attention if output.qc_kind else (0, 100)
            ratings[unit.pk] = float(rng.randrange(low, high + 1))
        elif output.qc_kind:
            ratings[unit.pk] = rng.uniform(0, 15)
        else:
            ratings[unit.pk] = max(0.0, min(100.0, quality[output.system.name] + rng.gauss(0, spread)))
    annotation = submit_assignment(assignment, ratings=ratings)
    Annotation.objects.filter(pk=annotation.pk).update(step_seconds=dict(step_seconds))
    return annotation


SYSTEM_QUALITY = {"copy-ref": 85.0, "trim": 60.0, "random": 20.0}


def rated_campaign(
    slug: str, raters: Sequence[User], *, n_sources: int = 6, seed: int = 0, without_references: int = 0,
    categories: dict[str, str] | None = None,
) -> Campaign:
    """Sources with two references and three systems (a copied reference, a trimmed source, random words),
    rated by every rater; ratings follow the system's quality with per-rater noise."""
    rng = random.Random(seed)
    campaign = CampaignFactory.create(name=slug, slug=slug)
    systems = {name: SystemFactory.create(campaign=campaign, name=name) for name in SYSTEM_QUALITY}
    outputs: list[Output] = []
    for s in range(n_sources):
        source = SourceFactory.create(campaign=campaign, external_id=f"s{s}", text=sentence(rng, 10), order=s)
        refs = [sentence(rng, 6), sentence(rng, 5)]
        if s >= without_references:
            for position, text in enumerate(refs):
                ReferenceFactory.create(source=source, text=text, position=position)
        texts = {"copy-ref": refs[0], "trim": " ".join(source.text.split()[:5]), "random": sentence(rng, 6)}
        for i, (name, text) in enumerate(texts.items()):
            outputs.append(OutputFactory.create(source=source, system=systems[name], text=text, row_index=i,
                                         given_category=(categories or {}).get(name, "")))
    for rater in raters:
        for source in campaign.sources.all():
            annotation = AnnotationFactory.create(source=source, annotator=rater)
            OutputJudgement.objects.bulk_create(
                OutputJudgement(annotation=annotation, output=o,
                                rating=max(0.0, min(100.0, SYSTEM_QUALITY[o.system.name] + rng.uniform(-8, 8))))
                for o in outputs if o.source_id == source.pk
            )
    return campaign


def simulation_campaign(owner: User | None = None, *, n_sources: int = 6) -> Campaign:
    """The campaign "sim" that allocation simulations replay: :func:`rated_campaign` by three new annotators,
    owned by ``owner`` when given."""
    campaign = rated_campaign("sim", [AnnotatorFactory.create() for _ in range(3)], n_sources=n_sources)
    if owner is not None:
        campaign.owners.add(owner)
    return campaign


# --- Statistics (pure: no database) -----------------------------------------------------------------------


def make_records(
    table: dict[str, dict[str, dict[str, float]]],
    *,
    source_of: dict[str, str] | None = None,
    category: str | None = None,
) -> list[RatingRecord]:
    """Rating records from ``{system: {output: {rater: raw}}}``; each output its own source unless given."""
    from evaluation.stats.records import RatingRecord

    records = []
    for system, outputs in table.items():
        for output, ratings in outputs.items():
            source = (source_of or {}).get(output, output)
            for rater, raw in ratings.items():
                records.append(
                    RatingRecord(
                        source=source, output=output, system=system, rater=rater, raw=raw, category=category
                    )
                )
    return records
