"""REFEREE's synthetic data: outputs of a reference corpus, some degraded, and their supervision signals.

For every source of the corpus (ASSET validation in the product) the outputs are its references plus
degraded copies of them, so that about ``degraded_fraction`` of the outputs are degraded. The degradations
are the paper's (Appendix A): a degraded copy loses one to four random words (probability 0.3), has one to
five of its words scrambled (0.3), or swaps the complex and simplified sentences (0.4); the word-level ones
are ``metrics.perturb``'s random drop and reorder. Each output's reference-based signals are computed
against the *other* references of its source. Stage 2 may read the rated campaigns' outputs instead, or as
well (``stage2_data``): each distinct output against its source's references, degraded in the same way.
Signals are computed once, offline, with the suite metrics;
a signal that cannot be computed here (POMME without its artefact) is left missing and masked in the loss.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING

from metrics.perturb import Context
from metrics.perturb.perturbations import drop_random, reorder
from metrics.referee.config import REFERENCE_BASED_SIGNALS, REFERENCE_FREE_SIGNALS, RefereeConfig

if TYPE_CHECKING:
    from metrics.lens import Sample

logger = logging.getLogger(__name__)

DEGRADATIONS: dict[str, float] = {"delete": 0.3, "scramble": 0.3, "swap": 0.4}
"""How a degraded copy is made, and how often (REFEREE, Appendix A)."""
MAX_WORDS = {"delete": 4, "scramble": 5}
"""At most this many words are deleted or scrambled (at least one; a scramble moves at least two)."""


@dataclass(frozen=True)
class SyntheticExample:
    """One synthetic output and its signals (None: missing); ``degradation`` is how it was degraded (a key of
    :data:`DEGRADATIONS`), None for a reference."""

    source_id: str
    complex: str
    output: str
    others: tuple[str, ...]
    degradation: str | None
    signals: Mapping[str, float | None] = field(default_factory=dict)

    @property
    def degraded(self) -> bool:
        return self.degradation is not None


def degrade(complex_text: str, output: str, rng: random.Random) -> tuple[str, str, str] | None:
    """One degraded copy of the pair: (complex, output, how), the degradation drawn with the paper's
    probabilities; None when the drawn one cannot change this output (too few words)."""
    how = rng.choices(list(DEGRADATIONS), weights=list(DEGRADATIONS.values()))[0]
    if how == "swap":
        return output, complex_text, how
    words = len(output.split())
    count = min(rng.randint(1, MAX_WORDS[how]), words - 1)  # a deletion keeps at least one word
    if count < 1:
        return None
    change = drop_random if how == "delete" else reorder
    text, _, applied, _, skipped = change(output, 100.0 * count / words, rng, Context())
    if skipped is not None or not applied or text == output:
        return None
    return complex_text, text, how


def synthetic_outputs(
    rows: Sequence[tuple[str, str, Sequence[str]]], *, degraded_fraction: float, seed: int
) -> list[SyntheticExample]:
    """``rows`` = (source id, complex, references). Each reference is an output; degraded copies of randomly
    chosen references (:func:`degrade`) are added until they make about ``degraded_fraction`` of the outputs
    of the source (a draw that cannot apply is drawn again, a few times at most)."""
    rng = random.Random(seed)
    out: list[SyntheticExample] = []
    for source_id, complex_text, references in rows:
        refs = [r for r in dict.fromkeys(references) if r.strip()]
        outputs = [(ref, tuple(refs[:j] + refs[j + 1:])) for j, ref in enumerate(refs)]
        out.extend(_with_degraded_copies(source_id, complex_text, outputs, degraded_fraction, rng))
    return out


def system_outputs(
    rows: Sequence[tuple[str, str, Sequence[str], Sequence[str]]], *, degraded_fraction: float, seed: int
) -> list[SyntheticExample]:
    """``rows`` = (source id, complex, references, system outputs): each distinct output, against the
    references other than itself, plus degraded copies of randomly chosen outputs (as
    :func:`synthetic_outputs` degrades references) to make about ``degraded_fraction`` of the source's outputs.
    The paper's stage 2 reads such outputs: systems' simplifications of the sources of reference corpora."""
    rng = random.Random(seed)
    out: list[SyntheticExample] = []
    for source_id, complex_text, references, texts in rows:
        refs = [r for r in dict.fromkeys(references) if r.strip()]
        outputs = [(text, tuple(r for r in refs if r != text)) for text in dict.fromkeys(texts) if text.strip()]
        out.extend(_with_degraded_copies(source_id, complex_text, outputs, degraded_fraction, rng))
    return out


def _with_degraded_copies(
    source_id: str, complex_text: str, outputs: Sequence[tuple[str, tuple[str, ...]]], degraded_fraction: float,
    rng: random.Random,
) -> list[SyntheticExample]:
    """The (output, its references) of one source as examples, then degraded copies of outputs drawn at random
    until they make about ``degraded_fraction`` of the source's examples; a copy keeps the references of the
    output it degrades."""
    out = [SyntheticExample(source_id, complex_text, text, others, None) for text, others in outputs]
    texts = {text for text, _ in outputs}
    wanted = round(len(outputs) * degraded_fraction / (1.0 - degraded_fraction)) if outputs else 0
    made = 0
    for _ in range(4 * wanted):
        if made == wanted:
            break
        j = rng.randrange(len(outputs))
        text, others = outputs[j]
        degraded = degrade(complex_text, text, rng)
        if degraded is None:
            continue
        new_complex, changed, how = degraded
        if not changed.strip() or changed == new_complex or (new_complex == complex_text and changed in texts):
            continue  # unchanged, or the same as an undegraded output (e.g. a reference that copies the source)
        out.append(SyntheticExample(source_id, new_complex, changed, others, how))
        made += 1
    return out


def _suite_values(
    name: str, items: Sequence[tuple[str, str, tuple[str, ...]]], **options: object
) -> list[float | None]:
    from metrics.suite import Item, create_metric

    metric = create_metric(name, **options)
    scores = metric.score_batch([Item(c, o, refs) for c, o, refs in items], allow_empty=True)
    return [s.value if math.isfinite(s.value) else None for s in scores]


def synthetic_corpus(rows: Sequence[tuple[str, str, Sequence[str]]], config: RefereeConfig) -> list[SyntheticExample]:
    """The synthetic outputs ``config`` pre-trains on from its corpus: those of its first ``max_sources``
    rows (0: all), with its ``degraded_fraction`` and ``seed``; none when no stage reads the corpus."""
    if not config.reads_corpus:
        return []
    used = list(rows)[: config.max_sources] if config.max_sources else rows
    return synthetic_outputs(used, degraded_fraction=config.degraded_fraction, seed=config.seed)


def rated_outputs_corpus(samples: Sequence[Sample], config: RefereeConfig) -> list[SyntheticExample]:
    """The outputs of the rated campaigns that ``config``'s stage 2 reads (``stage2_data`` "outputs" or
    "both"): every distinct output of ``samples`` (the training split), against its source's references,
    with degraded copies as :func:`system_outputs` makes them; none otherwise. The ratings are not read. The
    examples depend on the samples, not on their order."""
    if not config.reads_outputs:
        return []
    sources: dict[str, tuple[str, list[str], list[str]]] = {}
    for sample in sorted(samples, key=lambda s: (s.source_id, s.output_id)):
        _, references, outputs = sources.setdefault(sample.source_id, (sample.complex, [], []))
        references.extend(sample.references)
        outputs.append(sample.output)
    rows = [(sid, complex_text, refs, outputs) for sid, (complex_text, refs, outputs) in sources.items()]
    return system_outputs(rows, degraded_fraction=config.degraded_fraction, seed=config.seed)


def pretraining_signals(config: RefereeConfig, data: str = "corpus") -> list[str]:
    """The signals the synthetic stages of ``config`` train on from ``data``: ``"corpus"`` (read by stage 1,
    and by stage 2 unless its ``stage2_data`` is "outputs") or ``"outputs"`` (the rated outputs stage 2 may
    read): the reference-free ones, and the reference-based ones where stage 2 reads that data (none for data
    no stage reads)."""
    reads = config.reads_corpus if data == "corpus" else config.reads_outputs
    if not reads:
        return []
    stage2 = 2 in config.stages and (config.stage2_data == "both" or config.stage2_data == data)
    return [*REFERENCE_FREE_SIGNALS, *(REFERENCE_BASED_SIGNALS if stage2 else ())]


SignalKey = tuple[str, str, tuple[str, ...]]
"""What a synthetic output's signals depend on: (complex, output, the other references of its source)."""


def signal_key(example: SyntheticExample) -> SignalKey:
    return example.complex, example.output, example.others


def _pomme_values(pairs: Sequence[tuple[str, str]], unavailable: dict[str, str] | None) -> list[float | None]:
    try:
        return _suite_values("pomme", [(c, o, ()) for c, o in pairs])
    except Exception as exc:  # no artefact here: the signal is missing, masked in the loss
        logger.warning("REFEREE: POMME signal unavailable (%s); it is masked", exc)
        if unavailable is not None:
            unavailable["pomme"] = f"{type(exc).__name__}: {exc}"
        return [None] * len(pairs)


def _reference_based_values(
    name: str, examples: Sequence[SyntheticExample], options: Mapping[str, object]
) -> list[float | None]:
    """``name`` against each example's other references (missing where it has none)."""
    have = [i for i, e in enumerate(examples) if e.others]
    values: list[float | None] = [None] * len(examples)
    items = [(examples[i].complex, examples[i].output, examples[i].others) for i in have]
    for i, value in zip(have, _suite_values(name, items, **options), strict=True):
        values[i] = value
    return values


def compute_signals(
    examples: Sequence[SyntheticExample],
    *,
    signals: Sequence[str],
    embed_cosine: Callable[[Sequence[tuple[str, str]]], list[float]] | None,
    bertscore: Mapping[str, object] | None = None,
    unavailable: dict[str, str] | None = None,
    known: Mapping[SignalKey, Mapping[str, float | None]] | None = None,
) -> list[SyntheticExample]:
    """The examples with the named ``signals`` (:data:`~metrics.referee.config.ALL_SIGNALS` but the human
    one). ``bertscore`` holds the suite BERTScore's options; ``embed_cosine`` is the cosine of sentence
    embeddings of (complex, output) pairs (None: the encoder's signals,
    :data:`~metrics.referee.config.ENCODER_SIGNALS`, cannot be computed here). ``known`` maps
    :func:`signal_key` to signals computed earlier, e.g. on another machine: a signal that every example has
    there is taken from it, any other is computed. A signal that cannot be computed here is left missing
    (masked in the loss) and, when ``unavailable`` is given, recorded there with the reason."""
    pairs = [(e.complex, e.output) for e in examples]

    def cosine() -> list[float | None]:
        if embed_cosine is None:
            raise ValueError("the cosine signal needs the encoder (embed_cosine)")
        return list(embed_cosine(pairs))

    computers: dict[str, Callable[[], list[float | None]]] = {
        "self_bleu": lambda: _suite_values("bleu", [(c, o, (c,)) for c, o in pairs]),
        "fkgl": lambda: _suite_values("fkgl", [(c, o, ()) for c, o in pairs]),
        "cosine": cosine,
        "compression": lambda: [len(o) / max(1, len(c)) for c, o in pairs],
        "pomme": lambda: _pomme_values(pairs, unavailable),
    }
    for name in REFERENCE_BASED_SIGNALS:
        options = dict(bertscore or {}) if name == "bertscore" else {}
        computers[name] = partial(_reference_based_values, name, examples, options)
    unknown = [name for name in signals if name not in computers]
    if unknown:
        raise ValueError(f"unknown REFEREE signals {unknown}; known: {sorted(computers)}")
    earlier = [known.get(signal_key(e), {}) for e in examples] if known is not None else None
    columns = {
        name: [row[name] for row in earlier] if earlier is not None and all(name in row for row in earlier)
        else computers[name]()
        for name in signals
    }
    return [replace(e, signals={name: columns[name][i] for name in signals}) for i, e in enumerate(examples)]


def standardise(examples: Sequence[SyntheticExample]) -> dict[str, tuple[float, float]]:
    """(mean, sd) of every signal over the examples that have it (sd 1 when constant)."""
    stats: dict[str, tuple[float, float]] = {}
    names = sorted({k for e in examples for k in e.signals})
    for name in names:
        values = [v for e in examples if (v := e.signals.get(name)) is not None]
        if not values:
            continue
        mean = sum(values) / len(values)
        sd = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) or 1.0
        stats[name] = (mean, sd)
    return stats
