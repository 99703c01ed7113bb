"""POMME (APPLS §7): simplicity as the difference of z-normalised log-perplexities of two LMs.

``POMME = Z(log PPL under the complex-domain LM) - Z(log PPL under the plain-domain LM)``, each z-score
taken with the mean and standard deviation of that LM's log-perplexities over a fixed reference dataset
holding texts of both levels; higher is simpler (the text surprises the complex LM more than the plain
one, relative to the reference).

Language models are pluggable (:class:`CausalLM`): local ``transformers`` causal LMs by path
(:class:`TransformersLM`, on the GPU when there is one) or the offline default, two Kneser-Ney trigram
models (:mod:`metrics.suite.ngram`) trained on ASSET validation: the complex LM on the original side,
the plain LM on the ten simplified sides, of rows ``[0, 1500)``; the z-reference is rows ``[1500, 2000)``,
original and first simplification (1,000 texts, both levels).  Those LMs are an artefact built by
:func:`build_default` (``python -m metrics.suite pomme-build --data-dir ...`` or ``manage.py build_pomme``)
into ``lm_dir`` (``$POMME_LM_DIR``, else ``var/pomme`` in the repository).  ASSET test, SimpEval and
Simplicity-DA are test data and are never trained on.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from metrics.suite.base import Item, Metric, MetricError, Score
from metrics.suite.ngram import KneserNeyLM
from metrics.suite.registry import register
from metrics.suite.version import SUITE_VERSION

TRAIN_ROWS = (0, 1500)
REFERENCE_ROWS = (1500, 2000)
ARTEFACT_FORMAT = "pomme-ngram/1"


class CausalLM(Protocol):
    """Anything that gives a log-perplexity (mean negative log-likelihood per token) per text."""

    name: str

    def log_perplexities(self, texts: Sequence[str]) -> list[float]: ...


@dataclass(frozen=True)
class ZReference:
    """Mean and standard deviation of one LM's log-perplexities over the reference dataset."""

    mean: float
    std: float

    @classmethod
    def of(cls, values: Sequence[float]) -> ZReference:
        if len(values) < 2:
            raise MetricError("a POMME reference needs at least two texts")
        std = statistics.stdev(values)
        return cls(statistics.fmean(values), std if std > 0 else 1.0)

    def z(self, value: float) -> float:
        return (value - self.mean) / self.std


class NgramLM:
    """A saved :class:`KneserNeyLM` under a name."""

    def __init__(self, model: KneserNeyLM, name: str) -> None:
        self.model, self.name = model, name

    def log_perplexities(self, texts: Sequence[str]) -> list[float]:
        return self.model.log_perplexities(texts)


class TransformersLM:
    """A local ``transformers`` causal LM (loaded from a path, never downloaded), GPU when present."""

    def __init__(self, path: str, *, device: str | None = None, batch_size: int = 16) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = Path(path.rstrip("/")).name
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer: Any = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        model: Any = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        self.model: Any = model.to(self.device).eval()
        self.batch_size = batch_size

    def log_perplexities(self, texts: Sequence[str]) -> list[float]:
        torch = self._torch
        out: list[float] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            enc = self.tokenizer(batch, return_tensors="pt", padding=True, truncation=True, max_length=512)
            ids, mask = enc["input_ids"].to(self.device), enc["attention_mask"].to(self.device)
            with torch.no_grad():
                logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1]
            target, target_mask = ids[:, 1:], mask[:, 1:].float()
            nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2).float(), target, reduction="none")
            per_text = (nll * target_mask).sum(1) / target_mask.sum(1).clamp(min=1)
            out.extend(float(v) for v in per_text.cpu())
        return out


def asset_rows(data_dir: Path, split: str, rows: tuple[int, int]) -> tuple[list[str], list[list[str]]]:
    """ASSET ``split`` originals of ``rows`` and, per simplification column 0-9, the same rows."""
    folder = data_dir / "asset"
    originals = (folder / f"asset.{split}.orig").read_text(encoding="utf-8").splitlines()[rows[0] : rows[1]]
    columns = [
        (folder / f"asset.{split}.simp.{k}").read_text(encoding="utf-8").splitlines()[rows[0] : rows[1]]
        for k in range(10)
    ]
    return originals, columns


def build_default(data_dir: Path, lm_dir: Path) -> Path:
    """Train the two default n-gram LMs on ASSET validation and store them with the z-reference.

    Returns:
        ``lm_dir`` (holding ``complex.json.gz``, ``plain.json.gz``, ``reference.json``).
    """
    originals, columns = asset_rows(data_dir, "valid", TRAIN_ROWS)
    complex_lm = KneserNeyLM.fit(originals)
    plain_lm = KneserNeyLM.fit([text for column in columns for text in column])
    ref_orig, ref_columns = asset_rows(data_dir, "valid", REFERENCE_ROWS)
    return write_artefact(
        lm_dir,
        complex_lm=complex_lm,
        plain_lm=plain_lm,
        reference_texts=[*ref_orig, *ref_columns[0]],
        train=f"asset-valid[{TRAIN_ROWS[0]}:{TRAIN_ROWS[1]}] orig (complex) / simp.0-9 (plain)",
        reference=f"asset-valid[{REFERENCE_ROWS[0]}:{REFERENCE_ROWS[1]}] orig + simp.0",
    )


def write_artefact(
    lm_dir: Path,
    *,
    complex_lm: KneserNeyLM,
    plain_lm: KneserNeyLM,
    reference_texts: Sequence[str],
    train: str,
    reference: str,
) -> Path:
    """Save two n-gram LMs and their z-references over ``reference_texts`` as a POMME artefact."""
    lm_dir.mkdir(parents=True, exist_ok=True)
    complex_lm.save(lm_dir / "complex.json.gz")
    plain_lm.save(lm_dir / "plain.json.gz")
    meta = {
        "format": ARTEFACT_FORMAT,
        "train": train,
        "reference": reference,
        "complex": ZReference.of(complex_lm.log_perplexities(reference_texts)).__dict__,
        "plain": ZReference.of(plain_lm.log_perplexities(reference_texts)).__dict__,
    }
    (lm_dir / "reference.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    _load_default.cache_clear()
    return lm_dir


def default_lm_dir() -> Path:
    """``$POMME_LM_DIR``, else ``pomme`` under ``$RANKRATE_VAR_DIR`` or the repository's ``var``."""
    configured = os.environ.get("POMME_LM_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    var = os.environ.get("RANKRATE_VAR_DIR", "").strip()
    return (Path(var).expanduser() if var else Path(__file__).resolve().parents[2] / "var") / "pomme"


@lru_cache(maxsize=4)
def _load_default(lm_dir: str) -> tuple[NgramLM, NgramLM, ZReference, ZReference]:
    folder = Path(lm_dir)
    meta_path = folder / "reference.json"
    if not meta_path.is_file():
        raise MetricError(
            f"pomme: no language models in {folder}; build them once with `python manage.py build_pomme` "
            "(or `python -m metrics.suite pomme-build --data-dir DIR --out DIR`)"
        )
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta.get("format") != ARTEFACT_FORMAT:
        raise MetricError(f"pomme: {meta_path} is not a {ARTEFACT_FORMAT} artefact; rebuild it")
    complex_lm = NgramLM(KneserNeyLM.load(folder / "complex.json.gz"), "kn3-asset-valid-orig")
    plain_lm = NgramLM(KneserNeyLM.load(folder / "plain.json.gz"), "kn3-asset-valid-simp")
    return complex_lm, plain_lm, ZReference(**meta["complex"]), ZReference(**meta["plain"])


@register("pomme")
class Pomme(Metric):
    """POMME on the output alone; higher is simpler.

    Options:
        lm_dir: Folder of the default n-gram artefact (default :func:`default_lm_dir`).
        complex_lm, plain_lm: Paths of local ``transformers`` causal LMs to use instead (both or neither);
            their z-reference is computed over ``reference_texts`` (required with them).
        device: For the transformers LMs (default: CUDA when available).
    """

    name = "pomme"
    needs_references = False
    higher_is_better = True

    def __init__(
        self,
        variant: str | None = None,
        *,
        lm_dir: str | Path | None = None,
        complex_lm: str | None = None,
        plain_lm: str | None = None,
        reference_texts: Sequence[str] | None = None,
        device: str | None = None,
    ) -> None:
        if (complex_lm is None) != (plain_lm is None):
            raise MetricError("pomme: give both complex_lm and plain_lm, or neither (the n-gram default)")
        if complex_lm is not None and not reference_texts:
            raise MetricError("pomme: transformers LMs need reference_texts (a reference dataset of both levels)")
        self._lm_dir = Path(lm_dir) if lm_dir is not None else default_lm_dir()
        self._paths = (complex_lm, plain_lm)
        self._reference_texts = list(reference_texts or ())
        self._device = device
        self._loaded: tuple[CausalLM, CausalLM, ZReference, ZReference] | None = None

    @property
    def signature(self) -> str:
        complex_lm, plain_lm = self._paths
        if complex_lm is not None and plain_lm is not None:
            lms = f"complex:{Path(complex_lm).name}|plain:{Path(plain_lm).name}|ref:{len(self._reference_texts)}texts"
        else:
            lms = (
                f"lm:kn3|complex:asset-valid-orig[{TRAIN_ROWS[0]}:{TRAIN_ROWS[1]}]"
                f"|plain:asset-valid-simp0-9[{TRAIN_ROWS[0]}:{TRAIN_ROWS[1]}]"
                f"|ref:asset-valid[{REFERENCE_ROWS[0]}:{REFERENCE_ROWS[1]}]|tok:nltk-lower"
            )
        return f"pomme:{lms}|z:logppl|version:{SUITE_VERSION}"

    def models(self) -> tuple[CausalLM, CausalLM, ZReference, ZReference]:
        """The two LMs and their z-references (loaded on first use)."""
        if self._loaded is None:
            complex_path, plain_path = self._paths
            if complex_path is not None and plain_path is not None:
                c_lm = TransformersLM(complex_path, device=self._device)
                p_lm = TransformersLM(plain_path, device=self._device)
                self._loaded = (
                    c_lm,
                    p_lm,
                    ZReference.of(c_lm.log_perplexities(self._reference_texts)),
                    ZReference.of(p_lm.log_perplexities(self._reference_texts)),
                )
            else:
                self._loaded = _load_default(str(self._lm_dir))
        return self._loaded

    def _score(self, items: Sequence[Item]) -> list[Score]:
        complex_lm, plain_lm, z_complex, z_plain = self.models()
        texts = [item.output for item in items]
        c_values, p_values = complex_lm.log_perplexities(texts), plain_lm.log_perplexities(texts)
        out = []
        for c, p in zip(c_values, p_values, strict=True):
            zc, zp = z_complex.z(c), z_plain.z(p)
            value = zc - zp
            out.append(Score(value if math.isfinite(value) else 0.0, {"z_complex": zc, "z_plain": zp}))
        return out


@dataclass(frozen=True)
class LevelComparison:
    """APPLS Table 3 for one dataset: mean of each side, the difference, and paired tests (per column)."""

    column: str  # "z_complex", "z_plain" or "pomme"
    n: int
    source_mean: float
    target_mean: float
    delta: float  # target - source
    p_ttest: float
    p_wilcoxon: float


def compare_levels(metric: Pomme, sources: Sequence[str], targets: Sequence[Sequence[str]]) -> list[LevelComparison]:
    """POMME and each LM's z-score on complex ``sources`` vs their simplifications ``targets``.

    ``targets[i]`` holds the simplifications of ``sources[i]``; their mean is paired with the source, and the
    paired t-test and Wilcoxon signed-rank test (two-sided) test the difference.
    """
    from scipy import stats

    if len(sources) != len(targets) or not sources:
        raise MetricError("compare_levels: one list of simplifications per source")
    src_scores = metric.score_batch([Item(s, s) for s in sources])
    flat = [t for group in targets for t in group]
    flat_scores = iter(metric.score_batch([Item(t, t) for t in flat]))
    per_source = [[next(flat_scores) for _ in group] for group in targets]
    out = []
    for column in ("z_complex", "z_plain", "pomme"):
        def value(score: Score, column: str = column) -> float:
            return score.value if column == "pomme" else float(score.components[column])

        a = [value(s) for s in src_scores]
        b = [statistics.fmean(value(s) for s in group) for group in per_source]
        diffs = [y - x for x, y in zip(a, b, strict=True)]
        out.append(
            LevelComparison(
                column,
                len(a),
                statistics.fmean(a),
                statistics.fmean(b),
                statistics.fmean(diffs),
                float(stats.ttest_rel(b, a).pvalue),
                float(stats.wilcoxon(diffs).pvalue) if any(diffs) else 1.0,
            )
        )
    return out
