"""SARI (Xu et al., 2016) in the two variants the papers used, both at sentence level.

``sari`` follows EASSE's default (``easse.sari.corpus_sari`` on one sentence): lowercase, sacreBLEU
``13a`` tokens, n-grams 1-4, per order the F1 of addition, keep and deletion (deletion as F1 too), each
averaged over the orders ("macro" SARI, as the released Java implementation), on a 0-100 scale.
Addition counts n-grams as sets, keep and deletion weigh each n-gram by its count, the complex and
output counts multiplied by the number of references.

``sari:del-precision`` is the same with deletion scored by its *precision*, as Xu et al. (2016) define
SARI and as EASSE's sentence-level SARI once scored it; the SIERA paper's SARI row on Simplicity-DA is of
this form (experiments/README.md compares both variants with the paper's figures).

``sari:lens`` follows the sentence SARI of the LENS authors' evaluation code (``experiments/
meta_evaluation/metrics/sari.py``, derived from Wei Xu's script): lowercase, NLTK ``word_tokenize``
tokens, keep/deletion precision and recall averaged over *distinct* n-grams with fractional credit,
deletion recall computed with the precision's numerator (as in that script), an addition n-gram
counted as good only if one of its tokens is not in the complex sentence or its tokens are not a
subsequence of the complex sentence's words, and the final score using deletion *precision*
(``(keep F1 + del P + add F1) / 3``), on a 0-1 scale.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sacrebleu

from metrics.suite.base import Item, Metric, Score
from metrics.suite.registry import register
from metrics.suite.tokenize import nltk_word_tokenize, tokenize_13a
from metrics.suite.version import SUITE_VERSION

NGRAM_ORDER = 4

Grams = tuple[Counter[tuple[str, ...]], ...]


def _ngrams(tokens: Sequence[str]) -> Grams:
    return tuple(
        Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)) for n in range(1, NGRAM_ORDER + 1)
    )


def _f1(precision: float, recall: float) -> float:
    return 2 * precision * recall / (precision + recall) if precision > 0 and recall > 0 else 0.0


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else 0.0


def _scaled(counts: Counter[tuple[str, ...]], factor: int) -> Counter[tuple[str, ...]]:
    return Counter({gram: count * factor for gram, count in counts.items()})


# --- EASSE -----------------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _easse_grams(text: str, lowercase: bool) -> Grams:
    return _ngrams(tokenize_13a(text.lower() if lowercase else text).split())


@dataclass(frozen=True)
class _EasseOrder:
    """What one n-gram order of SARI needs from the complex sentence and references (cached)."""

    orig_rep: Counter[tuple[str, ...]]  # complex counts x number of references
    orig_set: frozenset[tuple[str, ...]]
    refs_set: frozenset[tuple[str, ...]]
    add_ref: int  # n-grams the references add
    kept_ref: Counter[tuple[str, ...]]
    kept_ref_total: int
    del_ref: Counter[tuple[str, ...]]
    del_ref_total: int


@lru_cache(maxsize=4096)
def _easse_context(complex_sentence: str, references: tuple[str, ...], lowercase: bool) -> tuple[_EasseOrder, ...]:
    orig = _easse_grams(complex_sentence, lowercase)
    refs_all: list[Counter[tuple[str, ...]]] = [Counter() for _ in range(NGRAM_ORDER)]
    for ref in references:
        for n, grams in enumerate(_easse_grams(ref, lowercase)):
            refs_all[n].update(grams)
    orders = []
    for n in range(NGRAM_ORDER):
        orig_rep = _scaled(orig[n], len(references))
        kept_ref = orig_rep & refs_all[n]
        del_ref = orig_rep - refs_all[n]
        orig_set = frozenset(orig[n])
        refs_set = frozenset(refs_all[n])
        orders.append(
            _EasseOrder(
                orig_rep=orig_rep,
                orig_set=orig_set,
                refs_set=refs_set,
                add_ref=len(refs_set - orig_set),
                kept_ref=kept_ref,
                kept_ref_total=sum(kept_ref.values()),
                del_ref=del_ref,
                del_ref_total=sum(del_ref.values()),
            )
        )
    return tuple(orders)


def easse_sari_parts(
    complex_sentence: str, output: str, references: Sequence[str], *, lowercase: bool = True,
    deletion: str = "f1",
) -> tuple[float, float, float]:
    """EASSE's sentence SARI parts ``(add, keep, delete)``, each 0-100; deletion as F1 (EASSE's default)
    or, with ``deletion="precision"``, as precision (Xu et al.'s definition)."""
    if deletion not in ("f1", "precision"):
        raise ValueError(f"deletion is scored by 'f1' or 'precision', not {deletion!r}")
    context = _easse_context(complex_sentence, tuple(references), lowercase)
    sys_ = _easse_grams(output, lowercase)
    nrefs = len(references)
    add = keep = delete = 0.0
    for n, order in enumerate(context):
        sys_n = sys_[n]
        added = set(sys_n) - order.orig_set
        add_good = len(added & order.refs_set)
        add += _f1(_ratio(add_good, len(added)), _ratio(add_good, order.add_ref))

        sys_rep = _scaled(sys_n, nrefs)
        kept_sys = order.orig_rep & sys_rep
        kept_good = sum((kept_sys & order.kept_ref).values())
        keep += _f1(_ratio(kept_good, sum(kept_sys.values())), _ratio(kept_good, order.kept_ref_total))

        del_sys = order.orig_rep - sys_rep
        del_good = sum((del_sys & order.del_ref).values())
        del_precision = _ratio(del_good, sum(del_sys.values()))
        del_recall = _ratio(del_good, order.del_ref_total)
        delete += del_precision if deletion == "precision" else _f1(del_precision, del_recall)
    return 100 * add / NGRAM_ORDER, 100 * keep / NGRAM_ORDER, 100 * delete / NGRAM_ORDER


# --- LENS authors' evaluation code --------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _lens_tokens(text: str) -> tuple[str, ...]:
    return nltk_word_tokenize(text.lower())


@lru_cache(maxsize=1 << 16)
def _lens_grams(text: str) -> Grams:
    return _ngrams(_lens_tokens(text))


def _is_subsequence(needle: Sequence[str], haystack: Sequence[str]) -> bool:
    it = iter(haystack)
    return all(any(word == candidate for candidate in it) for word in needle)


@dataclass(frozen=True)
class _LensOrder:
    src_rep: Counter[tuple[str, ...]]  # complex counts x number of references
    src_set: frozenset[tuple[str, ...]]
    refs: Counter[tuple[str, ...]]
    refs_set: frozenset[tuple[str, ...]]
    kept_all: Counter[tuple[str, ...]]
    deleted_all: int  # distinct complex n-grams the references delete
    added_all: int  # distinct n-grams the references add
    src_tokens: frozenset[str]  # tokens of this order's complex n-grams (empty if the sentence is shorter)


@lru_cache(maxsize=4096)
def _lens_context(complex_sentence: str, references: tuple[str, ...]) -> tuple[tuple[_LensOrder, ...], tuple[str, ...]]:
    src = _lens_grams(complex_sentence)
    refs_all: list[Counter[tuple[str, ...]]] = [Counter() for _ in range(NGRAM_ORDER)]
    for ref in references:
        for n, grams in enumerate(_lens_grams(ref)):
            refs_all[n].update(grams)
    orders = []
    for n in range(NGRAM_ORDER):
        src_rep = _scaled(src[n], len(references))
        src_set = frozenset(src[n])
        refs_set = frozenset(refs_all[n])
        orders.append(
            _LensOrder(
                src_rep=src_rep,
                src_set=src_set,
                refs=refs_all[n],
                refs_set=refs_set,
                kept_all=src_rep & refs_all[n],
                deleted_all=len(src_rep - refs_all[n]),
                added_all=len(refs_set - src_set),
                src_tokens=frozenset(token for gram in src[n] for token in gram),
            )
        )
    # The script tests additions against the complex sentence split on whitespace (lowercased, untokenised).
    return tuple(orders), tuple(complex_sentence.lower().split())


def _lens_order(
    order: _LensOrder, out: Counter[tuple[str, ...]], nrefs: int, src_words: Sequence[str]
) -> tuple[float, float, float, float]:
    """``(keep F1, deletion precision, deletion F1, addition F1)`` for one n-gram order."""
    out_rep = _scaled(out, nrefs)

    kept = order.src_rep & out_rep
    kept_good = kept & order.refs
    keep_p = _ratio(sum(kept_good[g] / kept[g] for g in kept_good), len(kept))
    keep_r = _ratio(sum(kept_good[g] / order.kept_all[g] for g in kept_good), len(order.kept_all))
    keep = 2 * keep_p * keep_r / (keep_p + keep_r) if keep_p > 0 or keep_r > 0 else 0.0

    deleted = order.src_rep - out_rep
    deleted_good = deleted - order.refs
    credit = sum(deleted_good[g] / deleted[g] for g in deleted_good)
    del_p = _ratio(credit, len(deleted))
    del_r = _ratio(credit, order.deleted_all)  # the script divides the precision's numerator here too
    del_f = 2 * del_p * del_r / (del_p + del_r) if del_p > 0 or del_r > 0 else 0.0

    added = set(out) - order.src_set
    good = sum(
        1
        for gram in added & order.refs_set
        if any(token not in order.src_tokens for token in gram) or not _is_subsequence(gram, src_words)
    )
    add_p = _ratio(good, len(added))
    add_r = _ratio(good, order.added_all)
    add = 2 * add_p * add_r / (add_p + add_r) if add_p > 0 or add_r > 0 else 0.0
    return keep, del_p, del_f, add


def lens_sari_parts(complex_sentence: str, output: str, references: Sequence[str]) -> dict[str, float]:
    """The LENS evaluation code's sentence SARI parts, 0-1: ``keep``, ``del_p``, ``del_f1``, ``add``."""
    orders, src_words = _lens_context(complex_sentence, tuple(references))
    out = _lens_grams(output)
    totals = [0.0, 0.0, 0.0, 0.0]
    for n, order in enumerate(orders):
        for k, part in enumerate(_lens_order(order, out[n], len(references), src_words)):
            totals[k] += part
    keep, del_p, del_f, add = (total / NGRAM_ORDER for total in totals)
    return {"keep": keep, "del_p": del_p, "del_f1": del_f, "add": add}


@register("sari", variants=("lens", "del-precision"))
class Sari(Metric):
    """SARI: EASSE's default (``sari``, 0-100), the same with deletion precision (``sari:del-precision``,
    0-100) or the LENS paper's sentence SARI (``sari:lens``, 0-1).

    Components: ``add``, ``keep``, ``delete`` (``sari``, ``sari:del-precision``); ``add``, ``keep``,
    ``del_p``, ``del_f1`` (``sari:lens``, whose value uses ``del_p``).
    """

    needs_references = True
    higher_is_better = True
    needs_complex = True

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        if options:
            raise TypeError(f"sari takes no options, got {sorted(options)}")
        self.variant = variant
        self.name = f"sari:{variant}" if variant else "sari"
        self.deletion = "precision" if variant == "del-precision" else "f1"

    @property
    def signature(self) -> str:
        if self.variant == "lens":
            return f"sari:lens|case:lower|tok:nltk-punkt|del:precision|nrefs:var|version:{SUITE_VERSION}"
        return (f"sari:easse|case:lower|tok:13a|del:{self.deletion}|nrefs:var|sacrebleu:{sacrebleu.__version__}"
                f"|version:{SUITE_VERSION}")

    def _score(self, items: Sequence[Item]) -> list[Score]:
        memo: dict[Item, Score] = {}  # many systems output the same text for a sentence
        return [memo[item] if item in memo else memo.setdefault(item, self._one(item)) for item in items]

    def _one(self, item: Item) -> Score:
        if self.variant == "lens":
            parts = lens_sari_parts(item.complex, item.output, item.references)
            return Score(value=(parts["keep"] + parts["del_p"] + parts["add"]) / 3, components=parts)
        add, keep, delete = easse_sari_parts(item.complex, item.output, item.references, deletion=self.deletion)
        return Score(value=(add + keep + delete) / 3, components={"add": add, "keep": keep, "delete": delete})
