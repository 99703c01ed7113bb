"""sacreBLEU BLEU: per-output sentence BLEU (effective order, exponential smoothing) and corpus BLEU."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import sacrebleu
from sacrebleu.metrics.bleu import BLEU

from metrics.suite.base import Item, Metric, Score
from metrics.suite.registry import register
from metrics.suite.version import SUITE_VERSION


@register("bleu")
class Bleu(Metric):
    """sacreBLEU BLEU (0-100) against all references of each output (13a tokens, mixed case).

    :meth:`score_batch` gives sentence BLEU (``effective_order=True``, as ``sacrebleu.sentence_bleu``);
    :meth:`corpus_score` gives corpus BLEU over a batch (the references need not be equally many).
    """

    name = "bleu"
    needs_references = True
    higher_is_better = True

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        if options:
            raise TypeError(f"bleu takes no options, got {sorted(options)}")
        self._sentence = BLEU(effective_order=True)
        self._corpus = BLEU()

    @property
    def signature(self) -> str:
        return _signature(self._sentence, "sentence")

    @property
    def corpus_signature(self) -> str:
        return _signature(self._corpus, "corpus")

    def _score(self, items: Sequence[Item]) -> list[Score]:
        memo: dict[tuple[str, tuple[str, ...]], Score] = {}
        out: list[Score] = []
        for item in items:
            key = (item.output, item.references)
            score = memo.get(key)
            if score is None:
                # A one-segment corpus with effective order is exactly sacreBLEU's sentence BLEU; the
                # scorer with that segment's references cached is shared by all outputs of the source.
                result = _sentence_scorer(item.references).corpus_score([item.output], None)
                parts = {f"p{n + 1}": float(p) for n, p in enumerate(result.precisions)}
                score = memo[key] = Score(value=float(result.score), components={**parts, "bp": float(result.bp)})
            out.append(score)
        return out

    def corpus_score(self, items: Sequence[Item]) -> Score:
        """Corpus BLEU of the whole batch (references padded with ``None`` where fewer)."""
        batch = list(items)
        self.validate(batch)
        width = max((len(item.references) for item in batch), default=0)
        streams: list[list[str | None]] = [
            [item.references[k] if k < len(item.references) else None for item in batch] for k in range(width)
        ]
        result = self._corpus.corpus_score([item.output for item in batch], streams)  # type: ignore[arg-type]
        parts = {f"p{n + 1}": float(p) for n, p in enumerate(result.precisions)}
        return Score(value=float(result.score), components={**parts, "bp": float(result.bp)})


@lru_cache(maxsize=1024)
def _sentence_scorer(references: tuple[str, ...]) -> BLEU:
    return BLEU(effective_order=True, references=[[ref] for ref in references])


def _signature(bleu: BLEU, level: str) -> str:
    case = "lc" if bleu.lowercase else "mixed"
    eff = "yes" if bleu.effective_order else "no"
    return (
        f"bleu:sacrebleu|level:{level}|case:{case}|eff:{eff}|tok:{bleu.tokenizer.signature()}"
        f"|smooth:{bleu.smooth_method}|nrefs:var|sacrebleu:{sacrebleu.__version__}|version:{SUITE_VERSION}"
    )
