"""The learned-metric version registry: create (and queue) a training run, train, promote, roll back, cancel.

A version is created ``queued``; the Celery task ``metrics.tasks.learned_train_run`` (queue ``gpu``, run by a
worker with concurrency 1) or ``manage.py train_lens`` calls :func:`learned_version_train`, which moves it to
``running`` and then to ``succeeded``, ``failed`` or ``cancelled``. Only a succeeded version can be promoted;
a failed or cancelled run never touches the active version. Progress events are stored and broadcast to the
Channels group ``learned-<version id>``.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import socket
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import Campaign, User
from core.budgets import training_sources_check
from core.dispatch import task_send_on_commit
from core.errors import Conflict, NotAllowed, ServiceError
from core.events import broadcast
from core.heartbeat import Heartbeat
from core.services import Delivery, job_budget_check, work_claim, work_heartbeat, work_reap
from metrics.learned.callbacks import Callback, ProgressEvent, TrainingCancelled, TrainResult
from metrics.learned.config import Json, LearnedConfig
from metrics.learned.kinds import LearnedKind, TrainingInputs, stale_components
from metrics.learned.research import on_device
from metrics.lens.config import TrainConfig
from metrics.models import LearnedVersion, TrainingEvent
from metrics.selectors import learned_version_state, training_event_payload
from metrics.services.learned import (
    SNAPSHOT_FILE,
    check_version_sources,
    learned_config,
    learned_kind,
    learned_training_data,
    learned_version_components,
)

logger = logging.getLogger(__name__)

TRAIN_TASK = "metrics.tasks.learned_train_run"
"""The task that trains a queued version (queued by name: services import no tasks)."""


def learned_group(version_id: int) -> str:
    """The Channels group a version's training events go to (``training.progress``, ``training.status``)."""
    return f"learned-{version_id}"


def _finite(value: Any) -> Any:
    """JSON-safe copy: NaN and infinities become None (PostgreSQL's JSON rejects them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def lens_version_create(
    *,
    config: TrainConfig,
    campaigns: Sequence[Campaign],
    started_by: User | None,
    note: str = "",
    enqueue: bool = True,
) -> LearnedVersion:
    """:func:`learned_version_create` of a LENS ``config`` built already."""
    return learned_version_create(kind="lens", config=config, campaigns=campaigns, started_by=started_by, note=note,
                                  enqueue=enqueue)


def learned_version_create(
    *,
    kind: str,
    options: Mapping[str, Json] | None = None,
    config: LearnedConfig | None = None,
    campaigns: Sequence[Campaign] = (),
    corpora: Sequence[str] = (),
    started_by: User | None,
    note: str = "",
    enqueue: bool = True,
) -> LearnedVersion:
    """Register a training run of any learned metric and (``enqueue=True``) queue it on the ``gpu`` queue once
    committed.

    ``options`` are the kind's training options (``seed``, ``encoder``...), checked by its config class (or
    ``config``, built already). The kind says what it trains on: LENS needs rated campaigns with references;
    REFEREE rated campaigns (stage 3) and a corpus (stages 1-2); SIERA a corpus only. ``corpora`` defaults to
    ``asset-valid``; one not imported is a 400 saying how to import it. ``started_by`` must be a platform admin
    (None: a command-line run). The device is the platform's choice, whatever the config says.
    """
    family = learned_kind(kind)
    if started_by is not None and not started_by.is_platform_admin:
        raise NotAllowed(f"only admins may train {family.label}")
    if config is None:
        config = learned_config(family, options or {})
    elif not isinstance(config, family.config_class):
        raise ServiceError(f"a {family.label} version needs a {family.config_class.__name__}", field="options")
    campaigns = list(campaigns)
    training_sources_check(campaigns=campaigns, corpora=corpora)
    chosen = check_version_sources(family, config, campaigns=campaigns, corpora=corpora)
    return _version_create(kind=family, config=config, campaigns=campaigns, corpora=chosen, started_by=started_by,
                           note=note, enqueue=enqueue)


def _version_create(
    *, kind: LearnedKind, config: LearnedConfig, campaigns: Sequence[Campaign], corpora: Sequence[str],
    started_by: User | None, note: str, enqueue: bool,
) -> LearnedVersion:
    with transaction.atomic():
        if enqueue:
            job_budget_check(owner=started_by)
        version = LearnedVersion.objects.create(
            kind=kind.name, encoder=config.encoder_name, k=config.top_k, heldout_fraction=config.heldout_fraction,
            seed=config.first_seed, hyperparameters=_finite(config.to_dict()), started_by=started_by, note=note[:200],
            corpora=list(corpora),
        )
        version.campaigns.set(campaigns)
        if enqueue:
            task_send_on_commit(TRAIN_TASK, [version.pk])
    return version


def training_device() -> str | None:
    """The device every learned metric trains on (``LEARNED_DEVICE``; empty: CUDA when there is one)."""
    return settings.LEARNED_DEVICE or None


def training_device_type(device: str | None) -> str:
    """The type (``"cuda"``, ``"cpu"``...) of the device a run on ``device`` trains on (None: CUDA when there
    is one, the rule of ``metrics.lens.inference.resolve_device``); imports torch, so only a training run
    calls it."""
    from metrics.lens.inference import resolve_device

    return resolve_device(device).type


def learned_version_dir(version: LearnedVersion) -> Path:
    return Path(settings.LEARNED_CHECKPOINT_DIR) / f"v{version.pk}"


def _finish(version: LearnedVersion, status: str, **fields: Any) -> None:
    fields = {"status": status, "finished_at": timezone.now(), **fields}
    LearnedVersion.objects.filter(pk=version.pk).update(**fields)
    version.refresh_from_db()
    broadcast(learned_group(version.pk), {"event": "training.status", **learned_version_state(version)})


class _EventRecorder(Callback):
    """Stores every progress event of a version, broadcasts it to the version's group, then tells ``listener``."""

    def __init__(self, version: LearnedVersion, listener: Callable[[ProgressEvent], None] | None) -> None:
        self.version = version
        self.listener = listener

    def on_progress(self, event: ProgressEvent) -> None:
        heldout = _finite(event.heldout.to_dict()) if event.heldout is not None else None
        row = TrainingEvent.objects.create(
            version=self.version, kind=event.kind, epoch=event.epoch, step=event.step,
            total_steps=event.total_steps, loss=_finite(float(event.loss)),
            heldout_tau=(heldout or {}).get("tau", {}).get("all") if heldout else None,
            heldout_pearson=heldout.get("pearson") if heldout else None,
            heldout_loss=heldout.get("loss") if heldout else None,
            heldout=heldout, is_best=event.is_best,
        )
        broadcast(learned_group(self.version.pk),
                  {"event": "training.progress", "version": self.version.pk, **training_event_payload(row)})
        if self.listener is not None:
            self.listener(event)


class _CancelRequested(Callback):
    """Cancels the run once an admin has asked for it (``learned_version_cancel``)."""

    def __init__(self, version_id: int) -> None:
        self.version_id = version_id

    def should_cancel(self) -> bool:
        return LearnedVersion.objects.filter(pk=self.version_id, cancel_requested=True).exists()


def learned_version_train(
    *, version: LearnedVersion, listener: Callable[[ProgressEvent], None] | None = None, worker: str = "",
) -> LearnedVersion:
    """Run a queued version's training now (in this process) and record the outcome.

    Never raises for a training error: the row ends ``failed`` with the error text (``cancelled`` when a
    cancel was requested) and the active version is left alone. A version already finished is returned
    unchanged, so a redelivered task does nothing; so is one running elsewhere with a fresh heartbeat (a
    second delivery of the same run); one left ``running`` by a dead worker (silent for longer than
    ``JOB_STALE_SECONDS``) starts again. While training, a heartbeat thread says the run is alive.
    ``listener`` also gets every progress event (the command prints them).
    """
    claimed = work_claim(TRAINING, pk=version.pk, worker=worker or f"{socket.gethostname()}:{os.getpid()}",
                         only=Q(cancel_requested=False), started_at=timezone.now(), error="")
    version.refresh_from_db()
    if not claimed:
        if not version.is_finished and version.status != LearnedVersion.Status.RUNNING:
            # cancel requested before the worker got to it
            _finish(version, LearnedVersion.Status.CANCELLED, error="Cancelled before training started.")
        return version
    beat = Heartbeat(lambda: work_heartbeat(TRAINING, pk=version.pk), float(settings.JOB_HEARTBEAT_SECONDS))
    with beat:
        return _train_claimed(version, listener)


def train(
    kind: LearnedKind, config: LearnedConfig, inputs: TrainingInputs, *, out_dir: Path,
    callbacks: Sequence[Callback] = (),
) -> TrainResult:
    """Train a version of ``kind``: the one place the service enters a kind's training code (torch is imported
    by the kind on its first training, never at start-up)."""
    if kind.needs_campaigns and not inputs.train:
        raise ServiceError("no training samples: the campaigns have no rated outputs"
                           + (" with references" if kind.needs_references else ""))
    return kind.train(config, inputs, out_dir=out_dir, callbacks=callbacks)


def _train_claimed(
    version: LearnedVersion, listener: Callable[[ProgressEvent], None] | None
) -> LearnedVersion:
    TrainingEvent.objects.filter(version=version).delete()
    broadcast(learned_group(version.pk), {"event": "training.status", **learned_version_state(version)})
    out_dir = learned_version_dir(version)
    started = time.perf_counter()

    try:
        kind = learned_kind(version.kind)
        data = learned_training_data(version, device=training_device())
        LearnedVersion.objects.filter(pk=version.pk).update(
            data_sha256=data.sha256, data_counts=data.counts, data_warnings=data.warnings
        )
        for warning in data.warnings:
            logger.warning("%s v%s: %s", version.label, version.pk, warning)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / SNAPSHOT_FILE).write_bytes(data.canonical)
        for name, content in data.files.items():
            (out_dir / name).write_bytes(content)
        config = on_device(kind.name, data.config, training_device_type(data.config.device))
        if config != data.config:  # the research configuration's batches and precision on a GPU, recorded
            hyperparameters = _finite({**config.to_dict(), "device": version.hyperparameters.get("device")})
            LearnedVersion.objects.filter(pk=version.pk).update(hyperparameters=hyperparameters)
            version.hyperparameters = hyperparameters
        callbacks = [_EventRecorder(version, listener), _CancelRequested(version.pk)]
        result = train(kind, config, data.inputs, out_dir=out_dir, callbacks=callbacks)
    except TrainingCancelled as exc:
        shutil.rmtree(out_dir / "best", ignore_errors=True)
        _finish(version, LearnedVersion.Status.CANCELLED, train_seconds=time.perf_counter() - started,
                error=f"Cancelled at epoch {exc.epoch}, step {exc.step}; the active model was not changed.")
    except Exception as exc:
        logger.exception("%s v%s failed", version.label, version.pk)
        shutil.rmtree(out_dir / "best", ignore_errors=True)
        _finish(version, LearnedVersion.Status.FAILED, train_seconds=time.perf_counter() - started,
                error=f"{type(exc).__name__}: {exc}"[:5000])
    else:
        identity = _encoder_identity(result.best_checkpoint)
        for warning in result.warnings:
            logger.warning("%s v%s: %s", version.label, version.pk, warning)
        _finish(
            version, LearnedVersion.Status.SUCCEEDED,
            checkpoint_path=str(result.best_checkpoint), heldout_results=_finite(result.heldout),
            best_epoch=result.best_epoch, train_seconds=result.train_seconds, device=result.device,
            encoder_identity=_finite(identity), data_warnings=[*data.warnings, *result.warnings],
        )
    return version


def _encoder_identity(checkpoint: Path) -> dict[str, Any]:
    """What the checkpoint records of its encoder (name, resolved path, size), whichever kind wrote it."""
    from metrics.learned.checkpoint import read_metadata

    identity = read_metadata(checkpoint).get("encoder_identity")
    return dict(identity) if isinstance(identity, dict) else {}


@dataclass(frozen=True)
class Promotion:
    """What promoting a version would do (``learned_version_promotion``): the pages' confirmation, the API's
    and the command's refusal without ``force`` read it."""

    version: LearnedVersion
    active: LearnedVersion | None
    """The version of the same kind that serves now (None: none does, or ``version`` itself)."""
    rollback: bool
    """``version`` is older than the active one: promoting it rolls back."""
    worse: str
    """Why ``version`` looks worse than the active one ("" when it does not): its held-out τ_all is lower."""


def learned_version_promotion(version: LearnedVersion) -> Promotion:
    """What promoting ``version`` would do, against the version of its kind that serves now."""
    return _promotion(version, LearnedVersion.objects.filter(kind=version.kind, is_active=True).first())


def learned_version_promotions(versions: Sequence[LearnedVersion]) -> dict[int, Promotion]:
    """``learned_version_promotion`` of each of ``versions`` by id (one query for the active versions)."""
    active = {v.kind: v for v in LearnedVersion.objects.filter(is_active=True, kind__in={v.kind for v in versions})}
    return {v.pk: _promotion(v, active.get(v.kind)) for v in versions}


def _promotion(version: LearnedVersion, active: LearnedVersion | None) -> Promotion:
    """The one rule for "worse than the active version": both have a held-out τ_all and this one's is lower
    (the held-out sets may differ between versions; it is the figure the registry shows side by side), and
    for a rollback: an older version than the active one."""
    if active is not None and active.pk == version.pk:
        active = None
    worse = ""
    if active is not None and version.tau_all is not None and active.tau_all is not None \
            and version.tau_all < active.tau_all:
        worse = (f"{version.label} v{version.pk}'s held-out τ_all {version.tau_all:.3f} is worse than the active "
                 f"v{active.pk}'s {active.tau_all:.3f}")
    return Promotion(version=version, active=active, rollback=active is not None and version.pk < active.pk,
                     worse=worse)


def learned_version_promote(*, version: LearnedVersion, user: User | None = None,
                            force: bool = False) -> LearnedVersion:
    """Make ``version`` the one that serves, in one transaction (rollback = promote an older version).

    The previous active version keeps serving until this commits. ``user`` must be a platform admin. A
    version worse than the active one (``learned_version_promotion``) is promoted only with ``force``; a
    blend whose components changed since it was trained is not promoted at all (409).
    """
    if user is not None and not user.is_platform_admin:
        raise NotAllowed(f"only admins may promote a {version.label} version")
    try:
        with transaction.atomic():
            target = LearnedVersion.objects.select_for_update().get(pk=version.pk)
            if target.status != LearnedVersion.Status.SUCCEEDED:
                raise Conflict(f"{target.label} v{target.pk} is {target.status}; only a succeeded version can be "
                               "promoted")
            if not target.checkpoint_path or not Path(target.checkpoint_path).is_dir():
                raise Conflict(f"{target.label} v{target.pk} has no checkpoint at {target.checkpoint_path!r}")
            stale = stale_components(learned_version_components(target))
            if stale is not None:  # a blend that could not score a single output once it served
                raise Conflict(f"{target.label} v{target.pk} cannot serve: {stale}", field="version")
            if not target.is_active:
                # Lock the current active row first, so concurrent promotions serialise on it and the "worse"
                # rule reads the version this promotion replaces, not one read before the lock.
                current = list(LearnedVersion.objects.select_for_update().filter(is_active=True, kind=target.kind))
                worse = _promotion(target, current[0] if current else None).worse
                if worse and not force:
                    raise Conflict(f"{worse}; promote it with force to do so anyway", field="force")
                LearnedVersion.objects.filter(pk__in=[v.pk for v in current]).update(is_active=False)
                target.is_active = True
                target.promoted_at = timezone.now()
                target.promoted_by = user
                target.save(update_fields=["is_active", "promoted_at", "promoted_by"])
    except IntegrityError:
        raise Conflict("another version was promoted at the same time; try again") from None
    return target


def learned_version_cancel(*, version: LearnedVersion) -> LearnedVersion:
    """Ask a queued or running version to stop; a queued one is cancelled at once."""
    with transaction.atomic():
        row = LearnedVersion.objects.select_for_update().get(pk=version.pk)
        if row.is_finished:
            raise Conflict(f"{row.label} v{row.pk} has already {row.status}")
        row.cancel_requested = True
        fields = ["cancel_requested"]
        if row.status == LearnedVersion.Status.QUEUED:
            row.status = LearnedVersion.Status.CANCELLED
            row.finished_at = timezone.now()
            row.error = "Cancelled before training started."
            fields += ["status", "finished_at", "error"]
        row.save(update_fields=fields)
    broadcast(learned_group(row.pk), {"event": "training.status", **learned_version_state(row)})
    return row


class _TrainingDelivery(Delivery[LearnedVersion]):
    """Training runs are delivered like every background job (``core.services``): claimed by
    :func:`learned_version_train`, kept alive by its heartbeat, and reaped by every worker's reaper; one is
    queued again by sending ``learned_train_run``, and one that fails leaves no half-trained checkpoint."""

    model = LearnedVersion
    life = ("heartbeat_at", "started_at")
    doing = "training"
    requeued = "Restarting"
    advice = ("; the active model was not changed. Start a new training run to try again.")
    forget_worker = False
    owner_field = "started_by"

    def describe(self, row: LearnedVersion) -> dict[str, Any]:
        return {"kind": f"{row.kind}-training", "id": row.pk, "status": row.status}

    def restart(self, row: LearnedVersion) -> None:
        task_send_on_commit(TRAIN_TASK, [row.pk])

    def on_failed(self, row: LearnedVersion) -> None:
        # The killed run may have saved a best checkpoint of its first epochs: nothing half-trained stays on
        # disk to be taken for a result.
        transaction.on_commit(partial(shutil.rmtree, learned_version_dir(row) / "best", ignore_errors=True))

    def on_reaped(self, rows: list[LearnedVersion]) -> None:
        for row in rows:
            broadcast(learned_group(row.pk), {"event": "training.status", **learned_version_state(row)})


TRAINING = _TrainingDelivery()


def learned_version_reap(*, dead_workers: Collection[str] = (), now: datetime | None = None) -> list[LearnedVersion]:
    """Training runs left ``running`` by a worker that is gone (one of ``dead_workers``, or silent for
    longer than ``JOB_STALE_SECONDS``): queued again while they have starts left (``JOB_MAX_ATTEMPTS``),
    otherwise ended ``failed`` with a message saying so (:func:`core.services.work_reap`). Returns the
    versions handled."""
    return work_reap(TRAINING, dead_workers=dead_workers, now=now)
