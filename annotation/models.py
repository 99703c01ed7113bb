"""Data model of a Rank & Rate study.

Campaign ─┬─ Source ─┬─ Reference
          │          ├─ RatingUnit (one per distinct output text) ── Output (one per system)
          │          └─ Slot (wanted ratings) ── Assignment (annotator × source)
          ├─ System                                   └─ Annotation (versions) ─┬─ OutputJudgement
          │                                                                     └─ AspectJudgement
          └─ ImportBatch (imported files; imported annotations point to it)
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.contrib.contenttypes.fields import GenericRelation
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from annotation.rules import (
    MAX_COMPLETION_URL_CHARS,
    annotator_source_id,
    completion_url_problem,
    is_crowd_username,
)


def new_pseudonym() -> str:
    return f"A-{secrets.token_hex(4)}"


class User(AbstractUser):
    class Role(models.TextChoices):
        ADMIN = "admin", "Admin"
        RESEARCHER = "researcher", "Researcher"
        ANNOTATOR = "annotator", "Annotator"

    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    # Exports name annotators by this stable pseudonym, never by username or e-mail.
    pseudonym = models.CharField(max_length=32, unique=True, default=new_pseudonym, editable=False)

    def clean(self) -> None:
        """Forms (the admin's included) refuse a crowd-namespace username for any but a crowd account."""
        super().clean()
        if is_crowd_username(self.username) and not (
            self.pk is not None and CrowdWorker.objects.filter(user_id=self.pk).exists()
        ):
            raise ValidationError({"username": "usernames starting with a crowd platform's name and a hyphen "
                                               "are kept for crowd workers' accounts"})

    @property
    def is_platform_admin(self) -> bool:
        return self.is_superuser or self.role == self.Role.ADMIN

    @property
    def is_researcher(self) -> bool:
        return self.role == self.Role.RESEARCHER or self.is_platform_admin


class Category(models.TextChoices):
    SPLIT = "split", "Splitting-focused"
    DELETION = "deletion", "Deletion-focused"
    PARAPHRASE = "paraphrase", "Paraphrase-focused"


def validate_completion_url(value: str) -> None:
    """``annotation.rules.completion_url_problem`` for forms and the admin."""
    problem = completion_url_problem(value) if value else None
    if problem:
        raise ValidationError(problem)


class Campaign(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    instructions = models.TextField(blank=True)
    ratings_per_output = models.PositiveSmallIntegerField(
        default=3, validators=[MinValueValidator(1), MaxValueValidator(50)]
    )
    compression_threshold = models.FloatField(
        default=0.5, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Outputs shorter than this share of the source's characters are deletion-focused.",
    )
    idle_release_minutes = models.PositiveIntegerField(
        null=True, blank=True,
        help_text="Unfinished assignments idle for longer go back to the pool (empty: never).",
    )
    # Crowd platforms: workers arrive through /crowd/<slug>/<crowd_token>/ and see `completion_code` at the end.
    crowd_token = models.CharField(max_length=64, blank=True)
    completion_code = models.CharField(max_length=64, blank=True)
    batch_size = models.PositiveIntegerField(
        null=True, blank=True, help_text="Sources per annotator at most (empty: as many as there are)."
    )
    crowd_completion_url = models.CharField(
        max_length=MAX_COMPLETION_URL_CHARS, blank=True, validators=[validate_completion_url],
        help_text="Where a worker who finished is sent, with their code in place of {code} (Prolific: "
                  "https://app.prolific.com/submissions/complete?cc={code}; empty: no redirect).",
    )
    crowd_places = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(1_000_000)],
        help_text="Crowd workers the study admits at most, as its places on the platform (empty: as many as "
                  "there is free work for).",
    )
    class Allocation(models.TextChoices):
        UNIFORM = "uniform", "Uniform (sources in their order)"
        ADAPTIVE = "adaptive", "Adaptive (sources the metrics tell apart most first)"

    allocation = models.CharField(
        max_length=16, choices=Allocation.choices, default=Allocation.UNIFORM,
        help_text="Which source's screen is handed out next. Uniform: in source order. Adaptive: the source "
                  "with the highest priority / (1 + its screens handed out so far), the priority being how "
                  "differently the automatic metrics (SARI, BLEU, FKGL) score its outputs; every source alike "
                  "(round-robin) until metric scores are computed. Screens always show all outputs (shorter "
                  "screens measured no better).",
    )
    # Quality control: share of sources that get attention items, share of sources shown twice.
    attention_rate = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)])
    repeat_share = models.FloatField(default=0.0, validators=[MinValueValidator(0.0), MaxValueValidator(0.5)])
    owners = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="owned_campaigns", blank=True)
    annotators = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="CampaignAnnotator", related_name="annotated_campaigns", blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Background work about the campaign (analysis, rescoring); deleted with it.
    jobs = GenericRelation("core.BackgroundJob", content_type_field="subject_type", object_id_field="subject_id")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class CampaignAnnotator(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="memberships")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    active = models.BooleanField(default=True)
    added_at = models.DateTimeField(auto_now_add=True)
    removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "annotator"], name="uniq_campaign_annotator")]


def new_token() -> str:
    return secrets.token_urlsafe(24)


class CampaignInvite(models.Model):
    """A link a researcher hands out: whoever opens it gets an annotator account on the campaign."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="invites")
    token = models.CharField(max_length=64, unique=True, default=new_token, editable=False)
    max_uses = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: any number of people.")
    uses = models.PositiveIntegerField(default=0)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]


def new_crowd_key() -> str:
    return secrets.token_urlsafe(24)


class CrowdWorker(models.Model):
    """An external worker (Prolific, Mechanical Turk) and the passwordless account made for them.

    This row, not the account's username, is what makes an account a crowd account. ``key`` binds the
    account to the browser of the first visit (a signed cookie) and is the worker's personal link: knowing a
    worker's platform id is not enough to act as them."""

    class Platform(models.TextChoices):
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Mechanical Turk"

    platform = models.CharField(max_length=16, choices=Platform.choices)
    worker_id = models.CharField(max_length=64)
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_worker")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="crowd_workers")
    # The platform's study/session (Prolific) or assignment (MTurk) ids of the latest visit.
    study_id = models.CharField(max_length=64, blank=True)
    session_id = models.CharField(max_length=64, blank=True)
    key = models.CharField(max_length=64, unique=True, default=new_crowd_key, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "platform", "worker_id"], name="uniq_crowd_worker")
        ]


class CrowdTurnedAway(models.Model):
    """A crowd worker who opened the campaign's crowd link when it had nothing for a new worker (no free work,
    or every place taken): the researcher's warning counts them. One row per worker, however often they came."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="crowd_turned_away")
    platform = models.CharField(max_length=16, choices=CrowdWorker.Platform.choices)
    worker_id = models.CharField(max_length=64)
    reason = models.CharField(max_length=16)  # annotation.services.operations.CrowdRoom, at the latest visit
    first_at = models.DateTimeField(auto_now_add=True)
    last_at = models.DateTimeField(auto_now=True)
    visits = models.PositiveIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "platform", "worker_id"], name="uniq_crowd_turned_away")
        ]


class AnnotatorExclusion(models.Model):
    """A researcher left an annotator's ratings out of the campaign's reports and ended their work on it;
    re-including closes the row."""

    class CrowdEnd(models.TextChoices):
        EXCLUDED = "excluded", "a page saying the submission was excluded, with no completion code"
        CODE = "code", "the completion code, as to everyone else"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="exclusions")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="exclusions")
    reason = models.TextField(blank=True)
    # What an excluded crowd worker sees at the end: the researcher's choice, made on the exclusion form.
    crowd_end = models.CharField(max_length=16, choices=CrowdEnd.choices, default=CrowdEnd.EXCLUDED)
    excluded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    excluded_at = models.DateTimeField(auto_now_add=True)
    reincluded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reincluded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-excluded_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "annotator"], condition=Q(reincluded_at__isnull=True),
                                    name="one_open_exclusion")
        ]


class ImportBatch(models.Model):
    class Kind(models.TextChoices):
        SIMPEVAL = "simpeval", "SimpEval CSV"
        JSONL = "jsonl", "JSONL"
        DA = "da", "Multi-aspect ratings CSV"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="imports")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    filename = models.CharField(max_length=500)
    sha256 = models.CharField(max_length=64)
    # SimpEval layout facts needed to write the file back exactly (columns, number formats).
    layout = models.JSONField(default=dict, blank=True)
    rows = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    # False while the import writes its rows (in short transactions): its sources get no slots yet, and a
    # second import into the campaign waits (annotation.services.imports).
    complete = models.BooleanField(default=True)
    # Beaten by every write step of the import, null once it is done (slots made too). An import whose
    # heartbeat is older than IMPORT_STALE_SECONDS was killed: its rows are removed (or its slots made).
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "sha256"], name="uniq_import_per_campaign")]


class Source(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="sources", db_index=False)
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    order = models.PositiveIntegerField(default=0)
    is_tutorial = models.BooleanField(default=False)
    # A repeated source (quality control: self-agreement) is a copy of `repeat_of`; reports leave it out.
    repeat_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="repeats")
    # For tutorial sources: the expected answers, checked before real work starts.
    tutorial_key = models.JSONField(default=dict, blank=True)
    # The import that created it (so a killed import's rows can be found and removed).
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["campaign", "order", "id"]
        constraints = [models.UniqueConstraint(fields=["campaign", "external_id"], name="uniq_source_external_id")]
        # Whether a campaign has tutorials, asked on each claim, answered without reading its other sources
        # (in place of the campaign's own index, so that no plan can prefer that one).
        indexes = [models.Index(fields=["campaign", "is_tutorial"], name="source_campaign_tutorial")]

    def __str__(self) -> str:
        return f"{self.external_id}: {self.text[:60]}"

    @property
    def id_for_annotators(self) -> str:
        """The id annotators see (a repeat shows its original's: quality control stays blind)."""
        return annotator_source_id(self.external_id, is_repeat=self.repeat_of_id is not None)


class TutorialPass(models.Model):
    """An annotator answered a tutorial source correctly; real work in a campaign waits for all of them."""

    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tutorial_passes")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="tutorial_passes")
    passed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["annotator", "source"], name="uniq_tutorial_pass")]


class Reference(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="references")
    text = models.TextField()
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["source", "position"]
        constraints = [models.UniqueConstraint(fields=["source", "position"], name="uniq_reference_position")]


class System(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="systems")
    name = models.CharField(max_length=200)
    # The import that created it (so a killed import's rows can be found and removed).
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["campaign", "name"], name="uniq_system_name")]

    def __str__(self) -> str:
        return self.name


class RatingUnit(models.Model):
    """One distinct output text of a source: annotators rate it once for every system that produced it.

    The automatic analysis (category, edits, features) is stored here, per text.
    """

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="units")
    text = models.TextField()
    text_key = models.CharField(max_length=64, help_text="sha256 of the text, for uniqueness")
    auto_category = models.CharField(max_length=16, choices=Category.choices, blank=True)
    analysis = models.JSONField(default=dict, blank=True)
    analysis_version = models.CharField(max_length=32, blank=True)
    analysis_error = models.TextField(blank=True)
    analysed_threshold = models.FloatField(null=True, blank=True)
    # The import that created it (so a killed import's rows can be found and removed).
    import_batch = models.ForeignKey(ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["source", "id"]
        constraints = [models.UniqueConstraint(fields=["source", "text_key"], name="uniq_unit_text")]


class Output(models.Model):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="outputs")
    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="outputs")
    unit = models.ForeignKey(RatingUnit, on_delete=models.CASCADE, related_name="outputs")
    text = models.TextField(help_text="The text annotators see.")
    raw_text = models.TextField(blank=True, help_text="The system's text as released, when it differs.")
    external_id = models.CharField(max_length=200, blank=True)
    import_batch = models.ForeignKey(
        ImportBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="outputs"
    )
    row_index = models.PositiveIntegerField(default=0, help_text="Row order in the imported file.")
    given_category = models.CharField(max_length=16, choices=Category.choices, blank=True)
    # Attention items: shown like any output, never reported as a system's output.
    qc_kind = models.CharField(max_length=16, blank=True, choices=[("bad", "Degraded copy"),
                                                                   ("unrelated", "Unrelated output")])
    qc_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="qc_copies")

    class Meta:
        ordering = ["source", "row_index", "id"]
        constraints = [models.UniqueConstraint(fields=["source", "system"], name="uniq_output_source_system")]


class Slot(models.Model):
    """One wanted rating of a non-tutorial source; an assignment fills it.

    ``campaign`` and ``position`` copy the source's campaign and order, which never change after import, so
    that claiming work reads the campaign's free slots in order from one index (``slot_free_in_order``)
    instead of joining and sorting every free slot of the campaign.

    ``allocation_key`` puts a free slot before those of lower keys (0 throughout a uniform campaign: source
    order). In an adaptive campaign it is the policy's ``priority / (1 + screens of the source handed out
    before this one)``: kept by ``annotation.services.allocation``, which sets it when the priorities are
    recomputed and when a slot goes back to the pool; taking a source's first free slot leaves the keys of its
    other free slots right, so a claim writes nothing more.
    """

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="slots")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+", db_index=False)
    position = models.PositiveIntegerField()  # the source's order
    index = models.PositiveSmallIntegerField()
    assignment = models.OneToOneField(
        "Assignment", null=True, blank=True, on_delete=models.SET_NULL, related_name="slot"
    )
    priority = models.FloatField(default=1.0)  # the source's allocation priority (adaptive campaigns)
    allocation_key = models.FloatField(default=0.0)

    class Meta:
        ordering = ["source", "index"]
        constraints = [models.UniqueConstraint(fields=["source", "index"], name="uniq_slot_index")]
        indexes = [models.Index(fields=["campaign", "-allocation_key", "position", "source", "index"],
                                name="slot_free_in_order", condition=Q(assignment__isnull=True))]


class Assignment(models.Model):
    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        IN_PROGRESS = "in_progress", "In progress"
        SUBMITTED = "submitted", "Submitted"
        RELEASED = "released", "Released to the pool"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ASSIGNED)
    # Order of outputs shown to this annotator: random per assignment, stable across reloads.
    shuffle_seed = models.PositiveIntegerField(default=0)
    assigned_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    last_activity_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign", "source__order", "id"]
        constraints = [
            # Never the same source twice to one person (released ones do not count).
            models.UniqueConstraint(
                fields=["source", "annotator"], condition=~Q(status="released"), name="uniq_live_assignment"
            )
        ]
        indexes = [
            models.Index(fields=["annotator", "status"]),
            # A campaign's assignments by status, in place of the campaign's own index: each claim reads the
            # annotator's unfinished one and looks for idle ones to release, and finished work must cost
            # neither anything, whatever the planner's statistics say of a new campaign (with only the
            # campaign's index, a claim read all of the campaign's finished work).
            models.Index(fields=["campaign", "status"], name="assignment_campaign_status"),
        ]


def rater_key(*, annotator_id: int | None, pseudonym: str | None, import_batch_id: int | None, rater_slot: str) -> str:
    """Who rated, as the statistics see it: the annotator's pseudonym, or ``"<import batch>:<slot>"`` for an
    imported rating slot (``Annotation.rater_key``; flat readers pass the values)."""
    if annotator_id is not None:
        return pseudonym or ""
    return f"{import_batch_id}:{rater_slot}"


class Annotation(models.Model):
    """One annotator's (or one imported rating slot's) judgement of one source.

    Drafts hold the page state in `draft`; submitting writes OutputJudgement rows and freezes
    the annotation. Reopening creates a new version (`previous` points back), never an overwrite.
    """

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        SUPERSEDED = "superseded", "Superseded by a newer version"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="annotations")
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.CASCADE, related_name="annotations"
    )
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="annotations"
    )
    # Imported datasets: anonymous rating slots ("rating_2"), never a known person.
    import_batch = models.ForeignKey(
        ImportBatch, null=True, blank=True, on_delete=models.CASCADE, related_name="annotations"
    )
    rater_slot = models.CharField(max_length=32, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    version = models.PositiveIntegerField(default=1)
    previous = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="next_version"
    )
    draft = models.JSONField(default=dict, blank=True)
    draft_revision = models.PositiveIntegerField(default=0)
    step_seconds = models.JSONField(default=dict, blank=True)
    step_timestamps = models.JSONField(default=dict, blank=True)
    submit_key = models.CharField(max_length=64, blank=True, help_text="Idempotency key of the submit request.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["source", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(annotator__isnull=False) | Q(import_batch__isnull=False),
                name="annotation_has_rater",
            ),
            # At most one open draft per assignment; reopening adds a draft beside the submitted version.
            models.UniqueConstraint(
                fields=["assignment"], condition=Q(status="draft"), name="one_draft_per_assignment"
            ),
        ]

    @property
    def rater_key(self) -> str:
        return rater_key(
            annotator_id=self.annotator_id,
            pseudonym=self.annotator.pseudonym if self.annotator is not None else None,
            import_batch_id=self.import_batch_id, rater_slot=self.rater_slot,
        )


class OutputJudgement(models.Model):
    """What one annotation says of one output (a row per system; a rating unit's outputs share values)."""

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="judgements")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="judgements")
    category = models.CharField(max_length=16, choices=Category.choices, blank=True)
    auto_category = models.CharField(max_length=16, choices=Category.choices, blank=True)
    edits = models.JSONField(null=True, blank=True, help_text="Corrected edits; null when not corrected.")
    auto_edits = models.JSONField(null=True, blank=True)
    rank = models.PositiveSmallIntegerField(null=True, blank=True)
    rating = models.FloatField(validators=[MinValueValidator(0.0), MaxValueValidator(100.0)])
    z_score = models.FloatField(null=True, blank=True, help_text="As released, for imported ratings.")

    class Meta:
        ordering = ["annotation", "output"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "output"], name="uniq_judgement"),
            models.CheckConstraint(condition=Q(rating__gte=0) & Q(rating__lte=100), name="rating_0_100"),
        ]


class AspectJudgement(models.Model):
    """One rater's rating of one output on one aspect (fluency, meaning, simplicity, ...).

    Multi-aspect files (Simplicity-DA, the crowd DA and Likert files) are stored here, beside the Rank & Rate
    `OutputJudgement`, so Rank & Rate reports never see them. The rater is the annotation: an imported slot
    per crowd worker (``worker_<WorkerId>``) or Simplicity-DA's aggregated pseudo-rater (``aggregate``).
    """

    class Scale(models.TextChoices):
        LIKERT_5 = "1..5", "Likert 1-5"
        LIKERT_GAIN = "-2..2", "Likert -2..2 (simplicity gain)"
        CONTINUOUS_100 = "0..100", "Continuous 0-100"

    annotation = models.ForeignKey(Annotation, on_delete=models.CASCADE, related_name="aspect_judgements")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="aspect_judgements")
    aspect = models.CharField(max_length=64)
    raw = models.FloatField()
    z = models.FloatField(null=True, blank=True, help_text="As released; null when the file gives none.")
    scale = models.CharField(max_length=8, choices=Scale.choices)

    class Meta:
        ordering = ["annotation", "output", "id"]
        constraints = [
            models.UniqueConstraint(fields=["annotation", "output", "aspect"], name="uniq_aspect_judgement"),
            models.CheckConstraint(
                condition=(
                    Q(scale="1..5", raw__gte=1, raw__lte=5)
                    | Q(scale="-2..2", raw__gte=-2, raw__lte=2)
                    | Q(scale="0..100", raw__gte=0, raw__lte=100)
                ),
                name="aspect_raw_on_scale",
            ),
        ]
        indexes = [models.Index(fields=["output", "aspect"])]


class Corpus(models.Model):
    """A named corpus without ratings (ASSET validation...): sources, each with its references.

    Imported once (``manage.py import_corpus``) and read by the perturbation testbed.
    """

    name = models.SlugField(max_length=100, unique=True)
    files = models.JSONField(default=list, blank=True)  # [{"name", "sha256", "role"}] of the imported files
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "corpora"

    def __str__(self) -> str:
        return self.name


class CorpusItem(models.Model):
    corpus = models.ForeignKey(Corpus, on_delete=models.CASCADE, related_name="items")
    index = models.PositiveIntegerField()  # line number in the source file, from 0
    source = models.TextField()
    references = models.JSONField(default=list)

    class Meta:
        ordering = ["corpus", "index"]
        constraints = [models.UniqueConstraint(fields=["corpus", "index"], name="uniq_corpus_item_index")]
