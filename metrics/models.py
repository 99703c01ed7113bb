"""Registry of trained learned-metric versions, their persisted training curves, and stored per-output scores.

LearnedVersion ── TrainingEvent (step / epoch progress, kept so a reload shows the curve so far)
MetricScore: any metric's score of an output (a learned version's under ``<kind>:<version id>``), with its
signature
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from django.conf import settings
from django.db import models
from django.db.models import Q

from metrics.learned.kinds import kinds


class _KindLabels(Mapping[str, str]):
    """Each registered learned kind's label by name, read from the registry (``metrics.learned.kinds``)."""

    def __getitem__(self, name: str) -> str:
        return kinds()[name].label

    def __iter__(self) -> Iterator[str]:
        return iter(kinds())

    def __len__(self) -> int:
        return len(kinds())


KIND_LABELS: Mapping[str, str] = _KindLabels()


class LearnedVersion(models.Model):
    """One training run of a learned metric (LENS, REFEREE or SIERA: ``kind``) and, when it succeeded, the
    checkpoint it produced.

    At most one version of each kind is active (serves scores); promotion swaps it atomically.
    """

    class Kind(models.TextChoices):
        """The built-in kinds, as the migrations record them (a test checks they are the registry's); a kind
        registered later (``register_kind``) stores its own name here too."""

        LENS = "lens", "LENS"
        REFEREE = "referee", "REFEREE"
        SIERA = "siera", "SIERA"
        BLEND = "blend", "Blend"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.LENS)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    corpora = models.JSONField(default=list, blank=True, help_text="Named corpora it trained on (REFEREE, SIERA).")
    campaigns = models.ManyToManyField("annotation.Campaign", related_name="learned_versions")
    note = models.CharField(max_length=200, blank=True)

    # What it was trained with.
    encoder = models.CharField(max_length=500, help_text="HF model name, local path or the bundled alias.")
    encoder_identity = models.JSONField(default=dict, blank=True, help_text="From the checkpoint metadata.")
    k = models.PositiveSmallIntegerField(default=3)
    heldout_fraction = models.FloatField(default=0.1)
    seed = models.IntegerField(default=0)
    hyperparameters = models.JSONField(default=dict, blank=True, help_text="The full TrainConfig.")
    data_sha256 = models.CharField(max_length=64, blank=True, help_text="sha256 of the canonical snapshot JSON.")
    data_counts = models.JSONField(default=dict, blank=True)
    data_warnings = models.JSONField(default=list, blank=True)

    # What came out.
    heldout_results = models.JSONField(default=dict, blank=True)
    best_epoch = models.PositiveIntegerField(null=True, blank=True)
    train_seconds = models.FloatField(null=True, blank=True)
    device = models.CharField(max_length=32, blank=True)
    checkpoint_path = models.CharField(max_length=1000, blank=True)
    error = models.TextField(blank=True)

    # Control.
    cancel_requested = models.BooleanField(default=False)
    is_active = models.BooleanField(default=False)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="learned_versions"
    )
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    promoted_at = models.DateTimeField(null=True, blank=True)
    # A run left "running" by a killed worker goes silent; the reaper restarts or fails it.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How many times a worker started it.")

    class Meta:
        db_table = "metrics_lensmodelversion"  # the table keeps the name it had when LENS was the only kind
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["kind"], condition=Q(is_active=True), name="one_active_version_per_kind"),
            models.CheckConstraint(
                condition=Q(is_active=False) | Q(status="succeeded"), name="active_lens_version_succeeded"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label} v{self.pk} ({self.status}{', active' if self.is_active else ''})"

    @property
    def label(self) -> str:
        return KIND_LABELS.get(self.kind, self.kind)

    @property
    def metric_name(self) -> str:
        """The name its scores are stored and shown under (``MetricScore.metric``): ``<kind>:<id>``."""
        return f"{self.kind}:{self.pk}"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def tau_all(self) -> float | None:
        tau = (self.heldout_results or {}).get("tau") or {}
        value = tau.get("all")
        return float(value) if value is not None else None


class TrainingEvent(models.Model):
    """A progress event of a training run: a step (running loss) or an epoch end (held-out results)."""

    class Kind(models.TextChoices):
        STEP = "step", "Step"
        EPOCH = "epoch", "Epoch"

    version = models.ForeignKey(LearnedVersion, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    epoch = models.PositiveIntegerField()
    step = models.PositiveIntegerField()
    total_steps = models.PositiveIntegerField()
    loss = models.FloatField(null=True, blank=True, help_text="Mean training loss of the epoch so far.")
    heldout_tau = models.FloatField(null=True, blank=True, help_text="Held-out Kendall tau-like (all).")
    heldout_pearson = models.FloatField(null=True, blank=True)
    heldout_loss = models.FloatField(null=True, blank=True)
    heldout = models.JSONField(null=True, blank=True)
    is_best = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "metrics_lenstrainingevent"
        ordering = ["version", "step", "id"]
        indexes = [models.Index(fields=["version", "step"])]


class MetricScore(models.Model):
    """A suite metric's score of one campaign output, stamped with the metric's exact signature.

    One row per (output, metric name): a row whose signature differs from the metric's current one is
    stale and is recomputed (and overwritten) by the next scoring of that metric.
    """

    output = models.ForeignKey("annotation.Output", on_delete=models.CASCADE, related_name="metric_scores")
    metric = models.CharField(max_length=100, help_text="Registry name: sari, sari:lens, lens:3...")
    signature = models.CharField(max_length=500)
    value = models.FloatField()
    components = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["output", "metric"]
        constraints = [models.UniqueConstraint(fields=["output", "metric"], name="uniq_metric_score")]
        indexes = [models.Index(fields=["metric", "signature"])]

    def __str__(self) -> str:
        return f"{self.metric}={self.value:.4g} (output {self.output_id})"


class MetricSensitivity(models.Model):
    """One cell of a metric's perturbation-sensitivity report (APPLS): its slope under one perturbation.

    Written by the last testbed run that scored the metric (every row of that metric is replaced at once,
    :func:`metrics.services.sensitivity.metric_sensitivity_record`); shown beside the metric's agreement with
    humans wherever metrics are compared.
    """

    metric = models.CharField(max_length=100, help_text="Registry name: sari, sari:lens, lens:3, pomme...")
    signature = models.CharField(max_length=500)
    perturbation = models.CharField(max_length=40)
    criterion = models.CharField(max_length=40)
    slope = models.FloatField(help_text="Estimated change of the score at 100% perturbation.")
    p_holm = models.FloatField()
    expected_direction = models.CharField(max_length=8)
    as_expected = models.BooleanField()
    n = models.PositiveIntegerField()
    run = models.JSONField(default=dict, blank=True, help_text="dataset, rows, sample, seed, magnitudes")
    created_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["metric", "id"]
        constraints = [models.UniqueConstraint(fields=["metric", "perturbation"], name="uniq_metric_sensitivity")]

    def __str__(self) -> str:
        return f"{self.metric} / {self.perturbation}: {self.slope:+.3g}"
