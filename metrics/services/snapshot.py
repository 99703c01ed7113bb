"""Training data for LENS: a hashed snapshot of campaigns' ratings, split by source.

Per rated output: target = mean z-score of its submitted ratings; raw ratings per rater (for the held-out
Kendall tau-like); category = ``annotation.rules.final_category`` ("unknown" when there is none).
Sources without references are skipped with a warning (LENS needs one).

The snapshot is written as canonical JSON (sorted keys, no spaces, UTF-8, sources and outputs in a fixed
order) and identified by the sha256 of those bytes; the same ratings give the same hash whatever order the
database returns rows in.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.models import Campaign
from metrics.lens import Sample
from metrics.selectors import RatedOutput, campaign_rated_outputs, campaign_references

SNAPSHOT_FORMAT = "rank-and-rate-lens-snapshot/1"


@dataclass
class TrainingSnapshot:
    """Samples of a snapshot, their train/held-out split, hash and counts."""

    train: list[Sample]
    heldout: list[Sample]
    sha256: str
    canonical: bytes
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def heldout_sources(self) -> list[str]:
        return sorted({s.source_id for s in self.heldout})


def _canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def split_sources(source_ids: Sequence[str], *, heldout_fraction: float, seed: int) -> set[str]:
    """Held-out sources: a seeded shuffle of the sorted ids, the first ``round(fraction * n)`` (at least one
    when the fraction is positive and there are two sources or more)."""
    ordered = sorted(source_ids)
    if heldout_fraction <= 0 or len(ordered) < 2:
        return set()
    random.Random(seed).shuffle(ordered)
    n = min(len(ordered) - 1, max(1, round(heldout_fraction * len(ordered))))
    return set(ordered[:n])


def lens_training_snapshot(
    *, campaigns: Sequence[Campaign], heldout_fraction: float = 0.1, seed: int = 0, aspect: str | None = None,
    require_references: bool = True,
) -> TrainingSnapshot:
    """Build the training data of a LENS version from one or more campaigns.

    Args:
        campaigns: Campaigns whose submitted ratings (collected or imported) are used.
        heldout_fraction: Share of sources held out for checkpoint selection.
        seed: Seed of the split.
        aspect: None for the overall ratings (each output's mean z and its raters' raw ratings); else one
            aspect of multi-aspect campaigns: each output's mean z on it, with no raw ratings (no tau-like).
        require_references: skip (and count) the sources without references, as LENS needs; a reference-free
            metric (REFEREE) passes False and trains on them too.

    Returns:
        The samples split into train and held-out, the canonical JSON and its sha256, counts and warnings.
    """
    sources_doc: list[dict[str, Any]] = []
    warnings: list[str] = []
    counts: dict[str, int] = defaultdict(int)
    for campaign in sorted(campaigns, key=lambda c: c.slug):
        references = campaign_references(campaign)
        by_source: dict[int, list[RatedOutput]] = defaultdict(list)
        for rated in campaign_rated_outputs(campaign):
            by_source[rated.source_pk].append(rated)
        no_refs = no_z = 0
        for source_pk, outputs in by_source.items():
            refs = references.get(source_pk, [])
            if not refs and require_references:
                no_refs += 1
                continue
            rows: list[dict[str, Any]] = []
            for rated in outputs:
                z = rated.mean_z if aspect is None else rated.aspects_z.get(aspect)
                if z is None:
                    no_z += 1
                    continue
                ratings = dict(sorted(rated.ratings.items())) if aspect is None else {}
                rows.append({
                    "system": rated.system,
                    "output": rated.text,
                    "z": z,
                    "category": rated.category,
                    "ratings": ratings,
                })
                counts["ratings"] += len(ratings) if aspect is None else 1
            if not rows:
                continue
            rows.sort(key=lambda r: r["system"])
            sources_doc.append({
                "id": f"{campaign.slug}/{outputs[0].source}",
                "complex": outputs[0].complex,
                "references": list(refs),
                "outputs": rows,
            })
        counts["sources_skipped_no_reference"] += no_refs
        counts["outputs_skipped_no_z"] += no_z
        if no_refs:
            warnings.append(f"{campaign.slug}: {no_refs} rated source(s) without references skipped")
        if no_z:
            on = "" if aspect is None else f" on {aspect!r}"
            warnings.append(f"{campaign.slug}: {no_z} output(s) without a z-score{on} skipped")
    sources_doc.sort(key=lambda s: s["id"])
    document: dict[str, Any] = {"format": SNAPSHOT_FORMAT, "sources": sources_doc}
    if aspect is not None:  # overall snapshots keep the document (and hash) they always had
        document["aspect"] = aspect
    canonical = _canonical(document)
    held = split_sources([s["id"] for s in sources_doc], heldout_fraction=heldout_fraction, seed=seed)
    train: list[Sample] = []
    heldout: list[Sample] = []
    for source in sources_doc:
        source_refs = tuple(source["references"])
        for row in source["outputs"]:
            sample = Sample(
                source_id=source["id"], output_id=row["system"], complex=source["complex"], output=row["output"],
                references=source_refs, z=row["z"], category=row["category"], ratings=row["ratings"],
            )
            (heldout if source["id"] in held else train).append(sample)
    counts.update(
        campaigns=len(campaigns),
        sources=len(sources_doc),
        outputs=len(train) + len(heldout),
        train_sources=len(sources_doc) - len(held),
        train_samples=len(train),
        heldout_sources=len(held),
        heldout_samples=len(heldout),
    )
    return TrainingSnapshot(
        train=train, heldout=heldout, sha256=hashlib.sha256(canonical).hexdigest(), canonical=canonical,
        counts=dict(counts), warnings=warnings,
    )
