"""The learned-metric family: the one place that knows how each kind (LENS, REFEREE, SIERA) builds its
options, reads its training data, trains, loads a checkpoint and scores.

Everything else (the version registry, the Celery task, promotion, serving, the metric registry, the
commands and the admin) works on ``LensModelVersion`` rows and asks :func:`learned_kind` for the rest.
Heavy packages (torch) are imported inside the functions, never at Django start-up.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotation.models import Annotation, Campaign, Corpus, OutputJudgement
from annotation.selectors import campaign_aspect_scales, corpus_rows
from core.errors import ServiceError

if TYPE_CHECKING:
    from metrics.lens import Callback, TrainResult
    from metrics.models import LensModelVersion
    from metrics.suite import Item

DEFAULT_CORPUS = "asset-valid"
"""The corpus REFEREE and SIERA train on when none is named (``import_corpus --name asset-valid``)."""
SNAPSHOT_FILE = "snapshot.json"


@dataclass(frozen=True)
class TrainingData:
    """What a version trains on, and what is recorded about it on the row."""

    sha256: str
    counts: dict[str, int]
    warnings: list[str]
    canonical: bytes
    run: Callable[[Path, Sequence[Callback]], TrainResult]


@dataclass(frozen=True)
class LearnedKind:
    """How one learned metric plugs into the family."""

    name: str
    label: str
    needs_campaigns: bool
    uses_corpora: bool
    needs_references: bool
    options: Callable[[Mapping[str, Any]], dict[str, Any]]
    """Validated, complete hyperparameters from a person's options (a ServiceError naming a bad one)."""
    data: Callable[[LensModelVersion], TrainingData]
    load: Callable[[str, str | None], Any]
    score: Callable[[Any, Sequence[Item]], list[tuple[float, dict[str, float]]]]
    corpus_rows_used: Callable[[Mapping[str, Any]], int | None] = lambda hyperparameters: None
    """How many of its corpora's rows (in order) a version with these hyperparameters trains on: None for
    none, 0 for all."""


# --- shared checks and data ---------------------------------------------------------------------------------


def check_rated_campaigns(campaigns: Sequence[Campaign], *, label: str, aspect: str | None = None) -> None:
    """Each campaign holds the ratings a version fine-tunes on: overall ratings, or those of ``aspect`` (a
    multi-aspect campaign's, e.g. Simplicity-DA's ``simplicity``); a 400 naming the campaign otherwise."""
    if not campaigns:
        raise ServiceError("choose at least one campaign", field="campaigns")
    for campaign in campaigns:
        submitted = Annotation.objects.filter(source__campaign=campaign, status=Annotation.Status.SUBMITTED)
        aspects = list(campaign_aspect_scales(campaign))
        if aspect is not None:
            if aspect not in aspects:
                held = f"its aspects are {', '.join(aspects)}" if aspects else "it holds overall ratings only"
                raise ServiceError(f"campaign {campaign.slug!r} has no {aspect!r} ratings ({held})", field="aspect")
        elif not OutputJudgement.objects.filter(annotation__in=submitted).exists():
            if aspects:
                raise ServiceError(
                    f"campaign {campaign.slug!r} holds ratings of aspects ({', '.join(aspects)}), not the overall "
                    f"ratings {label} fine-tunes on by default; REFEREE fine-tunes on one aspect with the option "
                    f"aspect, e.g. aspect=\"{aspects[-1]}\"",
                    field="campaigns")
            raise ServiceError(f"campaign {campaign.slug!r} has no submitted ratings ({label} fine-tunes on them)",
                               field="campaigns")


def check_corpora(names: Sequence[str]) -> list[str]:
    """The corpus names, each imported; a 400 naming the first that is not, and how to import it."""
    chosen = list(dict.fromkeys(n.strip() for n in names if n.strip())) or [DEFAULT_CORPUS]
    imported = set(Corpus.objects.filter(name__in=chosen).values_list("name", flat=True))
    for name in chosen:
        if name not in imported:
            raise ServiceError(
                f"corpus {name!r} has not been imported; import it once with `python manage.py import_corpus "
                f"--name {name} ORIG SIMP...` (for {DEFAULT_CORPUS}: ../shared/data/asset/asset.valid.orig and "
                f"asset.valid.simp.0-9)",
                field="corpus",
            )
    return chosen


def corpus_training_rows(names: Sequence[str]) -> tuple[list[tuple[str, str, list[str]]], dict[str, Any]]:
    """(source id, complex, references) of every item of the corpora, and a canonical description."""
    rows: list[tuple[str, str, list[str]]] = []
    for name in names:
        corpus = Corpus.objects.get(name=name)
        rows.extend((f"{name}/{index}", source, refs) for index, source, refs in corpus_rows(corpus=corpus))
    return rows, {"corpora": list(names), "rows": [[sid, c, refs] for sid, c, refs in rows]}


def learned_training_source_keys(version: LensModelVersion) -> set[str]:
    """The complex sentences ``version`` learned from (``source_key``): the sources of its campaigns and the
    corpus rows it trained on, as they are in the database now. A perturbation testbed run on these measures
    the metric on sentences it has seen."""
    from metrics.services.meta_evaluation import campaign_source_keys
    from metrics.suite.datasets import source_key

    keys: set[str] = set()
    for campaign in version.campaigns.all():
        keys |= campaign_source_keys(campaign)
    used = learned_kind(version.kind).corpus_rows_used(version.hyperparameters)
    if used is not None and version.corpora:
        rows, _ = corpus_training_rows(version.corpora)
        keys |= {source_key(text) for _, text, _ in (rows[:used] if used else rows)}
    return keys


def _canonical(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _config_error(exc: ValueError) -> ServiceError:
    return ServiceError(str(exc), field=getattr(exc, "key", "options"))


# --- LENS -------------------------------------------------------------------------------------------------


def _lens_options(options: Mapping[str, Any]) -> dict[str, Any]:
    from metrics.lens import TrainConfig
    from metrics.lens.config import ConfigError

    try:
        return TrainConfig.from_options(options).to_dict()
    except ConfigError as exc:
        raise ServiceError(str(exc), field=exc.key) from None


def _lens_data(version: LensModelVersion) -> TrainingData:
    from metrics.lens import TrainConfig
    from metrics.services import training as service
    from metrics.services.snapshot import lens_training_snapshot

    snapshot = lens_training_snapshot(campaigns=list(version.campaigns.all()),
                                      heldout_fraction=version.heldout_fraction, seed=version.seed)

    def run(out_dir: Path, callbacks: Sequence[Callback]) -> TrainResult:
        if not snapshot.train:
            raise ServiceError("no training samples: the campaigns have no rated outputs with references")
        config = TrainConfig.from_dict({**version.hyperparameters, "device": service.training_device()})
        return service.train(config, snapshot.train, snapshot.heldout, out_dir=out_dir, callbacks=list(callbacks))

    return TrainingData(snapshot.sha256, dict(snapshot.counts), list(snapshot.warnings), snapshot.canonical, run)


def _lens_load(path: str, device: str | None) -> Any:
    from django.conf import settings

    from metrics.lens.scorer import LensScorer  # torch: only when a version is first used

    # The setting names what runs on every device, as the scores' signature says: fp32 is fp32 on CUDA too
    # (the core's "auto" would be bf16 there), and int8 refuses a GPU rather than run something else.
    precision = settings.LENS_SERVING_PRECISION
    return LensScorer.load(path, device=device, int8=precision == "int8",
                           precision="bf16" if precision == "bf16" else "fp32")


def _lens_score(scorer: Any, items: Sequence[Item]) -> list[tuple[float, dict[str, float]]]:
    from metrics.lens import ScoreInput

    predictions = scorer.predict([ScoreInput(i.complex, i.output, i.references) for i in items])
    return [(p.z, {"score": p.score, "truncated": float(p.truncated)}) for p in predictions]


# --- REFEREE ----------------------------------------------------------------------------------------------


def _referee_options(options: Mapping[str, Any]) -> dict[str, Any]:
    from metrics.learned.config import ConfigError
    from metrics.referee import RefereeConfig

    try:
        return RefereeConfig.from_dict(options).to_dict()
    except ConfigError as exc:
        raise _config_error(exc) from None


def _referee_corpus_rows(hyperparameters: Mapping[str, Any]) -> int | None:
    from metrics.referee.config import RefereeConfig

    return RefereeConfig.from_dict(hyperparameters).corpus_rows_used


def _referee_data(version: LensModelVersion) -> TrainingData:
    from metrics.referee import RefereeConfig, train
    from metrics.services.snapshot import lens_training_snapshot
    from metrics.services.training import training_device

    config = RefereeConfig.from_dict({**version.hyperparameters, "device": training_device()})
    snapshot = lens_training_snapshot(campaigns=list(version.campaigns.all()),
                                      heldout_fraction=config.heldout_fraction, seed=config.seed,
                                      aspect=config.aspect, require_references=False)
    rows, corpus_doc = corpus_training_rows(version.corpora) if config.reads_corpus else ([], {})
    canonical = _canonical({"format": "rank-and-rate-referee-snapshot/1", "ratings": snapshot.sha256,
                            "corpus": corpus_doc})
    counts = {**snapshot.counts, "corpus_sources": len(rows)}

    def run(out_dir: Path, callbacks: Sequence[Callback]) -> TrainResult:
        if not snapshot.train:
            raise ServiceError("no training samples: the campaigns have no rated outputs")
        (out_dir / "ratings_snapshot.json").write_bytes(snapshot.canonical)
        return train(config, rows, snapshot.train, snapshot.heldout, out_dir=out_dir, callbacks=callbacks)

    return TrainingData(hashlib.sha256(canonical).hexdigest(), counts, list(snapshot.warnings), canonical, run)


def _referee_load(path: str, device: str | None) -> Any:
    from metrics.referee import RefereeScorer

    return RefereeScorer.load(path, device=device)


def _pair_score(scorer: Any, items: Sequence[Item]) -> list[tuple[float, dict[str, float]]]:
    """REFEREE's or SIERA's value per item, with ``truncated`` (1 when the pair is longer than the version
    reads), as LENS flags its own."""
    pairs = [(i.complex, i.output) for i in items]
    return [(float(v), {"truncated": float(cut)})
            for v, cut in zip(scorer.predict(pairs), scorer.truncated(pairs), strict=True)]


# --- SIERA ------------------------------------------------------------------------------------------------


def _siera_corpus_rows(hyperparameters: Mapping[str, Any]) -> int:
    from metrics.siera.config import SieraConfig

    return SieraConfig.from_dict(hyperparameters).corpus_rows_used


def _siera_options(options: Mapping[str, Any]) -> dict[str, Any]:
    from metrics.learned.config import ConfigError
    from metrics.siera import SieraConfig

    try:
        return SieraConfig.from_options(options).to_dict()
    except ConfigError as exc:
        raise _config_error(exc) from None


def _siera_data(version: LensModelVersion) -> TrainingData:
    from metrics.services.training import training_device
    from metrics.siera import SieraConfig, train

    config = SieraConfig.from_dict({**version.hyperparameters, "device": training_device()})
    rows, corpus_doc = corpus_training_rows(version.corpora)
    canonical = _canonical({"format": "rank-and-rate-siera-snapshot/1", "corpus": corpus_doc})

    def run(out_dir: Path, callbacks: Sequence[Callback]) -> TrainResult:
        return train(config, rows, out_dir=out_dir, callbacks=callbacks)

    return TrainingData(hashlib.sha256(canonical).hexdigest(), {"corpus_sources": len(rows)}, [], canonical, run)


def _siera_load(path: str, device: str | None) -> Any:
    from metrics.siera import SieraScorer

    return SieraScorer.load(path, device=device)


KINDS: dict[str, LearnedKind] = {
    "lens": LearnedKind("lens", "LENS", needs_campaigns=True, uses_corpora=False, needs_references=True,
                        options=_lens_options, data=_lens_data, load=_lens_load, score=_lens_score),
    "referee": LearnedKind("referee", "REFEREE", needs_campaigns=True, uses_corpora=True, needs_references=False,
                           options=_referee_options, data=_referee_data, load=_referee_load, score=_pair_score,
                           corpus_rows_used=_referee_corpus_rows),
    "siera": LearnedKind("siera", "SIERA", needs_campaigns=False, uses_corpora=True, needs_references=False,
                         options=_siera_options, data=_siera_data, load=_siera_load, score=_pair_score,
                         corpus_rows_used=_siera_corpus_rows),
}


def learned_kind(name: str, *, field: str = "kind") -> LearnedKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ServiceError(f"unknown learned metric {name!r}; one of: {', '.join(KINDS)}", field=field) from None
