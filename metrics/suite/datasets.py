"""Readers for the released rating files, as the LENS authors' evaluation code prepared them.

Texts are matched to references by their lowercased complex sentence (as that code does).  The LENS
loader also rejoins punctuation that some SimpEval_2022 outputs carry as separate tokens
(``" focus``, ``$ 400``) when the joined form occurs in the complex sentence; :func:`lens_clean_output`
is that rule, applied with ``clean=True``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from string import punctuation

from annotation.rules import sentence_key
from metrics.suite.base import Item

_RATING_SLOTS_2022 = ("rating_1", "rating_2", "rating_3")
WIKI_DA_ASPECTS = ("fluency", "meaning", "simplicity")


@dataclass(frozen=True)
class RatedOutput:
    """One rated output: what to score, and the human judgements of it."""

    source: str
    system: str
    item: Item
    category: str | None = None
    ratings: Mapping[str, float] = field(default_factory=dict)  # rater slot -> raw 0-100 rating
    aspects: Mapping[str, float] = field(default_factory=dict)  # aspect -> z-score (WIKI-DA)
    raw_aspects: Mapping[str, float] = field(default_factory=dict)  # aspect -> raw 0-100 rating


def read_references(src: Path, dst: Path) -> dict[str, tuple[str, ...]]:
    """Line-aligned sources and tab-separated references, keyed by the lowercased source."""
    out: dict[str, tuple[str, ...]] = {}
    with src.open(encoding="utf-8") as sources, dst.open(encoding="utf-8") as targets:
        for source, refs in zip(sources, targets, strict=False):
            key = sentence_key(source)
            if key:
                out[key] = tuple(ref.strip() for ref in refs.strip().split("\t"))
    return out


def lens_clean_output(output: str, complex_sentence: str) -> str:
    """The LENS loader's clean-up of a SimpEval output (see the module docstring).

    ``||`` and ``<SEP>`` separators go; then for every punctuation token standing between two tokens,
    the first of "left+punct+right", "left+punct", "punct+right" found in the (lowercased) complex
    sentence replaces its spaced form everywhere in the output.
    """
    text = output.replace(" || ", " ").replace("||", "").replace(" <SEP> ", " ")
    original = complex_sentence.lower()
    tokens = text.split()
    cleaned = text
    for i in range(1, len(tokens) - 1):
        mark = tokens[i]
        if mark not in punctuation:
            continue
        left, right = tokens[i - 1], tokens[i + 1]
        for joined, spaced in (
            (left + mark + right, f"{left} {mark} {right}"),
            (left + mark, f"{left} {mark}"),
            (mark + right, f"{mark} {right}"),
        ):
            if joined in original:
                cleaned = cleaned.replace(spaced, joined)
                break
    return cleaned


def _float(text: str | None) -> float | None:
    if text is None or not text.strip():
        return None
    value = float(text)
    return value if math.isfinite(value) else None


_CATEGORY = {"Splittings": "split", "Paraphrases": "paraphrase", "Deletions": "deletion"}


def load_simpeval_2022(data_dir: Path, *, clean: bool = True) -> list[RatedOutput]:
    """SimpEval_2022 (360 outputs) with its one reference per source and raw ratings per slot."""
    refs = read_references(
        data_dir / "simpeval" / "simpeval_2022_references.src", data_dir / "simpeval" / "simpeval_2022_references.dst"
    )
    out: list[RatedOutput] = []
    with (data_dir / "simpeval" / "simpeval_2022.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            complex_sentence = row["original"]
            output = lens_clean_output(row["generation"], complex_sentence) if clean else row["generation"]
            ratings = {slot: value for slot in _RATING_SLOTS_2022 if (value := _float(row.get(slot))) is not None}
            out.append(
                RatedOutput(
                    source=row["original_id"].strip(),
                    system=row["system"].strip(),
                    item=Item(complex_sentence, output, refs.get(sentence_key(complex_sentence), ())),
                    category=_CATEGORY.get(row["sentence_type"].strip(), row["sentence_type"].strip().lower()),
                    ratings=ratings,
                )
            )
    return out


def simpeval_past_sources(data_dir: Path) -> set[str]:
    """Lowercased complex sentences of SimpEval_past (LENS's training data)."""
    with (data_dir / "simpeval" / "simpeval_past.csv").open(newline="", encoding="utf-8") as handle:
        return {sentence_key(row["original"]) for row in csv.DictReader(handle)}


def load_wiki_da(data_dir: Path, *, exclude_sources: set[str] | None = None) -> list[RatedOutput]:
    """WIKI-DA (Simplicity-DA, 600 outputs) with its ASSET references; z-scores per aspect.

    Args:
        exclude_sources: Lowercased complex sentences to drop (the LENS paper drops SimpEval_past's,
            leaving 434 outputs).
    """
    refs = read_references(data_dir / "simplicity_da" / "references.src", data_dir / "simplicity_da" / "references.dst")
    excluded = exclude_sources or set()
    by_key: dict[tuple[str, str], RatedOutput] = {}
    with (data_dir / "simplicity_da" / "simplicity_DA.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = sentence_key(row["orig_sent"])
            if key in excluded:
                continue
            aspects = {a: v for a in WIKI_DA_ASPECTS if (v := _float(row.get(f"{a}_zscore"))) is not None}
            raw = {a: v for a in WIKI_DA_ASPECTS if (v := _float(row.get(a))) is not None}
            by_key[(key, row["sys_name"])] = RatedOutput(
                source=row["sent_id"].strip(),
                system=row["sys_name"].strip(),
                item=Item(row["orig_sent"], row["simp_sent"], refs.get(key, ())),
                aspects=aspects,
                raw_aspects=raw,
            )
    return list(by_key.values())


def load_simpeval_past(data_dir: Path) -> list[RatedOutput]:
    """SimpEval_past (2,400 outputs) with the ten ASSET test references of each source, raw ratings."""
    asset = data_dir / "asset"
    originals = (asset / "asset.test.orig").read_text(encoding="utf-8").splitlines()
    columns = [(asset / f"asset.test.simp.{k}").read_text(encoding="utf-8").splitlines() for k in range(10)]
    refs = {sentence_key(orig): tuple(col[i].strip() for col in columns) for i, orig in enumerate(originals)}
    out: list[RatedOutput] = []
    with (data_dir / "simpeval" / "simpeval_past.csv").open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            ratings = {f"rating_{k}": v for k in range(1, 6) if (v := _float(row.get(f"rating_{k}"))) is not None}
            out.append(
                RatedOutput(
                    source=row["original_id"].strip(),
                    system=row["system"].strip(),
                    item=Item(row["original"], row["generation"], refs.get(sentence_key(row["original"]), ())),
                    category="past",
                    ratings=ratings,
                )
            )
    return out
