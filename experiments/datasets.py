"""LENS training and test sets read straight from the released files (no database), for experiments.

Training: SimpEval_past (target: mean of the five released z-scores; references: the ten ASSET test
references of its source), plus optionally Simplicity-DA (target: mean of the fluency / meaning /
simplicity z-scores) and ASSET's ``human_ratings.csv`` (target: per-worker z-scores of the 0-100 ratings,
averaged over workers and aspects). Each extra dataset's target is standardised on its own
(``per_dataset_target``) so one dataset's scale does not dominate. Every extra dataset's sources are
ASSET/TurkCorpus test sentences and get the ten ASSET references.

Test: SimpEval_2022 (one reference, the "Human 1 Writing" outputs' twin). :func:`check_disjoint` refuses
a training set sharing a complex sentence, an output or a reference with the test sets
(SimpEval_2022, SimpDA_2022, SimpLikert_2022).
"""

from __future__ import annotations

import csv
import random
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from metrics.lens.types import Sample

CATEGORY = {"Splittings": "split", "Paraphrases": "paraphrase", "Deletions": "deletion"}
REFERENCE_SYSTEM = "Human 1 Writing"
TRAIN_SETS = ("past", "simplicity_da", "asset_ratings")


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").rstrip("\n").split("\n")


def _norm(text: str) -> str:
    return " ".join(text.split())


def _letters(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def asset_references(root: Path) -> dict[str, tuple[str, ...]]:
    """Complex sentence (whitespace-normalised) -> its ten ASSET test references."""
    originals = _lines(root / "asset" / "asset.test.orig")
    simps = [_lines(root / "asset" / f"asset.test.simp.{i}") for i in range(10)]
    return {_norm(text): tuple(s[i] for s in simps) for i, text in enumerate(originals)}


def load_simpeval_past(root: Path) -> list[Sample]:
    refs = asset_references(root)
    samples = []
    with open(root / "simpeval" / "simpeval_past.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            zs = [float(row[f"rating_{k}_z_score"]) for k in range(1, 6)]
            samples.append(Sample(
                source_id=f"past:{row['original_id']}", output_id=f"past:{row['id']}", complex=row["original"],
                output=row["processed_generation"] or row["generation"], references=refs[_norm(row["original"])],
                z=sum(zs) / len(zs), ratings={f"slot{k}": float(row[f"rating_{k}"]) for k in range(1, 6)},
            ))
    return samples


# SimpEval_2022's design within SimpEval_past, for choosing settings without the test set: the ASSET
# reference that SimpEval_past rates as a system ("asset.test.simp", the twin of "Human 1 Writing"), a
# second human (the twin of "Human 2 Writing") and the four strongest models, scored against the first's
# output as the single reference.
PAST_LIKE_2022_REFERENCE = "asset.test.simp"
PAST_LIKE_2022_SYSTEMS = (PAST_LIKE_2022_REFERENCE, "new_asset.test.simp.second", "muss_untokenized",
                          "ControlT5", "T5-3B", "T5-large")


def simpeval_past_systems(root: Path) -> dict[str, str]:
    """SimpEval_past output id (as :func:`load_simpeval_past` names it) -> its system."""
    with open(root / "simpeval" / "simpeval_past.csv", newline="", encoding="utf-8") as handle:
        return {f"past:{row['id']}": row["system"] for row in csv.DictReader(handle)}


def past_like_2022(samples: Sequence[Sample], systems: dict[str, str]) -> list[Sample]:
    """The SimpEval_past samples of ``PAST_LIKE_2022_SYSTEMS``, each with one reference: the output of
    ``PAST_LIKE_2022_REFERENCE`` for its source (a source without that output is left out)."""
    reference = {s.source_id: s.output for s in samples if systems.get(s.output_id) == PAST_LIKE_2022_REFERENCE}
    return [replace(s, references=(reference[s.source_id],)) for s in samples
            if systems.get(s.output_id) in PAST_LIKE_2022_SYSTEMS and s.source_id in reference]


def _source_ids(root: Path) -> dict[str, int]:
    return {_norm(text): i for i, text in enumerate(_lines(root / "asset" / "asset.test.orig"))}


SIMPLICITY_DA_ASPECTS = ("fluency", "meaning", "simplicity")


@dataclass(frozen=True)
class AspectRated:
    """One Simplicity-DA output with its ratings per aspect: the released z-score and the mean raw rating."""

    source_id: str
    system: str
    complex: str
    output: str
    references: tuple[str, ...]
    z: dict[str, float]
    raw: dict[str, float]


def load_simplicity_da_aspects(root: Path) -> list[AspectRated]:
    """Simplicity-DA's 600 outputs, in file order, each with fluency / meaning / simplicity ratings and the
    ten ASSET test references of its source (``source_id`` as :func:`load_simplicity_da`'s)."""
    refs, ids = asset_references(root), _source_ids(root)
    rows = []
    with open(root / "simplicity_da" / "simplicity_DA.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = _norm(row["orig_sent"])
            rows.append(AspectRated(
                source_id=f"asset:{ids[key]}", system=row["sys_name"], complex=row["orig_sent"],
                output=row["simp_sent"], references=refs[key],
                z={a: float(row[f"{a}_zscore"]) for a in SIMPLICITY_DA_ASPECTS},
                raw={a: float(row[a]) for a in SIMPLICITY_DA_ASPECTS},
            ))
    return rows


def load_simplicity_da(root: Path) -> list[Sample]:
    """Simplicity-DA: 600 outputs with fluency / meaning / simplicity z-scores (target: their mean)."""
    return [
        Sample(source_id=row.source_id, output_id=f"da:{i}", complex=row.complex, output=row.output,
               references=row.references, z=sum(row.z.values()) / 3, ratings={"mean": sum(row.raw.values()) / 3})
        for i, row in enumerate(load_simplicity_da_aspects(root))
    ]


def load_asset_ratings(root: Path) -> list[Sample]:
    """ASSET human_ratings.csv: 100 outputs x 3 aspects x 15 workers; per-worker z, mean per output."""
    originals = _lines(root / "asset" / "asset.test.orig")
    refs = asset_references(root)
    with open(root / "asset" / "human_ratings.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    by_worker: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        by_worker[row["worker_id"]].append(float(row["rating"]))
    stats = {w: (statistics.fmean(v), statistics.pstdev(v) or 1.0) for w, v in by_worker.items()}
    zs: dict[tuple[int, str], list[float]] = defaultdict(list)
    raw: dict[tuple[int, str], list[float]] = defaultdict(list)
    for row in rows:
        mean, sd = stats[row["worker_id"]]
        line = int(row["original_sentence_id"])  # 0-based line of asset.test.orig (its casing may differ)
        if _letters(originals[line]) != _letters(row["original"]):
            raise ValueError(f"human_ratings.csv: sentence {line} does not match asset.test.orig")
        key = (line, row["simplification"])
        zs[key].append((float(row["rating"]) - mean) / sd)
        raw[key].append(float(row["rating"]))
    return [
        Sample(source_id=f"asset:{line}", output_id=f"assetr:{i}", complex=originals[line], output=s,
               references=refs[_norm(originals[line])], z=statistics.fmean(zs[(line, s)]),
               ratings={"mean": statistics.fmean(raw[(line, s)])})
        for i, (line, s) in enumerate(zs)
    ]


def per_dataset_target(samples: Sequence[Sample]) -> list[Sample]:
    """The samples with their targets standardised (mean 0, sd 1) within this dataset."""
    values = [s.z for s in samples]
    mean, sd = statistics.fmean(values), statistics.pstdev(values) or 1.0
    return [replace(s, z=(s.z - mean) / sd) for s in samples]


def load_simpeval_2022(root: Path) -> list[tuple[Sample, str]]:
    """(sample, system) pairs of SimpEval_2022, each with its single reference."""
    folder = root / "simpeval"
    reference = dict(zip((_norm(s) for s in _lines(folder / "simpeval_2022_references.src")),
                         _lines(folder / "simpeval_2022_references.dst"), strict=True))
    rows = []
    with open(folder / "simpeval_2022.csv", newline="", encoding="utf-8") as handle:
        for i, row in enumerate(csv.DictReader(handle)):
            rows.append((Sample(
                source_id=f"s22:{row['original_id']}", output_id=str(i), complex=row["original"],
                output=row["generation"], references=(reference[_norm(row["original"])],),
                z=statistics.fmean(float(row[f"rating_{k}_zscore"]) for k in range(1, 4)),
                category=CATEGORY[row["sentence_type"]],
                ratings={f"slot{k}": float(row[f"rating_{k}"]) for k in range(1, 4)},
            ), row["system"]))
    return rows


def test_texts(root: Path) -> set[str]:
    """Every complex sentence, output and reference of the test sets (whitespace-normalised)."""
    texts = {_norm(t) for t in _lines(root / "simpeval" / "simpeval_2022_references.src")}
    texts |= {_norm(t) for t in _lines(root / "simpeval" / "simpeval_2022_references.dst")}
    with open(root / "simpeval" / "simpeval_2022.csv", newline="", encoding="utf-8") as handle:
        texts |= {_norm(row["original"]) for row in csv.DictReader(handle)}
    for name in ("simpDA_2022.csv", "simplikert_2022.csv"):
        with open(root / "simpeval" / name, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                texts.add(_norm(row["Input.original"]))
    return texts


def check_disjoint(train: Iterable[Sample], forbidden: set[str]) -> None:
    """Raise ValueError when a training sample's complex sentence is a test source (or vice versa)."""
    clashes = sorted({s.complex for s in train if _norm(s.complex) in forbidden})
    if clashes:
        raise ValueError(f"{len(clashes)} training source(s) are test sources, e.g. {clashes[0][:80]!r}")


def load_training(root: Path, sets: Sequence[str] = ("past",), *, standardise: bool = True) -> list[Sample]:
    """The chosen training sets (``TRAIN_SETS``), each with its own standardised target, checked disjoint
    from the test sets' sources."""
    loaders = {"past": load_simpeval_past, "simplicity_da": load_simplicity_da, "asset_ratings": load_asset_ratings}
    unknown = sorted(set(sets) - set(loaders))
    if unknown:
        raise ValueError(f"unknown training set(s) {unknown}; known: {list(loaders)}")
    samples: list[Sample] = []
    for name in sets:
        part = loaders[name](root)
        samples += per_dataset_target(part) if standardise and name != "past" else part
    check_disjoint(samples, test_texts(root))
    return samples


def split_heldout(samples: Sequence[Sample], fraction: float, seed: int) -> tuple[list[Sample], list[Sample]]:
    """Hold out ``fraction`` of the SimpEval_past sources: their SimpEval_past outputs form the held-out
    set; other datasets' outputs on those sources are dropped (they would leak the held-out sources).

    ``TrainConfig.heldout_references`` trims the held-out samples' references for selection.
    """
    sources = _shuffled_past_sources(samples, seed)
    return _hold_out(samples, set(sources[: max(1, round(fraction * len(sources)))]))


def cross_validation_folds(
    samples: Sequence[Sample], folds: int, seed: int = 0,
) -> list[tuple[list[Sample], list[Sample]]]:
    """``folds`` (train, held-out) splits whose held-out SimpEval_past sources partition them, shuffled by
    ``seed``; as in :func:`split_heldout`, other datasets' outputs on held-out sources are dropped."""
    if folds < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, not {folds}")
    sources = _shuffled_past_sources(samples, seed)
    return [_hold_out(samples, set(sources[f::folds])) for f in range(folds)]


def _shuffled_past_sources(samples: Sequence[Sample], seed: int) -> list[str]:
    sources = sorted({_norm(s.complex) for s in samples if s.source_id.startswith("past:")})
    random.Random(seed).shuffle(sources)
    return sources


def _hold_out(samples: Sequence[Sample], chosen: set[str]) -> tuple[list[Sample], list[Sample]]:
    train, held = [], []
    for s in samples:
        if _norm(s.complex) not in chosen:
            train.append(s)
        elif s.source_id.startswith("past:"):
            held.append(s)
    return train, held
