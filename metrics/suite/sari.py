"""SARI (Xu et al., 2016) in the two variants the papers used, both at sentence level.

``sari`` follows EASSE's default (``easse.sari.corpus_sari`` on one sentence): lowercase, sacreBLEU
``13a`` tokens, n-grams 1-4, per order the F1 of addition, keep and deletion (deletion as F1 too), each
averaged over the orders ("macro" SARI, as the released Java implementation), on a 0-100 scale.
Addition counts n-grams as sets, keep and deletion weigh each n-gram by its count, the complex and
output counts multiplied by the number of references.

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
from functools import lru_cache
from typing import Any

import sacrebleu

from metrics.suite.base import Item, Metric, Score
from metrics.suite.registry import register
from metrics.suite.tokenize import nltk_word_tokenize, tokenize_13a

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


def easse_sari_parts(
    complex_sentence: str, output: str, references: Sequence[str], *, lowercase: bool = True
) -> tuple[float, float, float]:
    """EASSE's sentence SARI parts ``(add, keep, delete)``, each 0-100, deletion as F1."""
    orig = _easse_grams(complex_sentence, lowercase)
    sys_ = _easse_grams(output, lowercase)
    refs_all: list[Counter[tuple[str, ...]]] = [Counter() for _ in range(NGRAM_ORDER)]
    for ref in references:
        for n, grams in enumerate(_easse_grams(ref, lowercase)):
            refs_all[n].update(grams)
    nrefs = len(references)
    add = keep = delete = 0.0
    for n in range(NGRAM_ORDER):
        orig_n, sys_n, refs_n = orig[n], sys_[n], refs_all[n]
        orig_set, sys_set, refs_set = set(orig_n), set(sys_n), set(refs_n)
        added = sys_set - orig_set
        add_ref = refs_set - orig_set
        add_good = added & refs_set
        add += _f1(_ratio(len(add_good), len(added)), _ratio(len(add_good), len(add_ref)))

        orig_rep = _scaled(orig_n, nrefs)
        sys_rep = _scaled(sys_n, nrefs)
        kept_sys = orig_rep & sys_rep
        kept_ref = orig_rep & refs_n
        kept_good = sum((kept_sys & kept_ref).values())
        keep += _f1(_ratio(kept_good, sum(kept_sys.values())), _ratio(kept_good, sum(kept_ref.values())))

        del_sys = orig_rep - sys_rep
        del_ref = orig_rep - refs_n
        del_good = sum((del_sys & del_ref).values())
        delete += _f1(_ratio(del_good, sum(del_sys.values())), _ratio(del_good, sum(del_ref.values())))
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


def _lens_order(
    src: Counter[tuple[str, ...]],
    out: Counter[tuple[str, ...]],
    refs: Counter[tuple[str, ...]],
    nrefs: int,
    src_words: Sequence[str],
) -> tuple[float, float, float, float]:
    """``(keep F1, deletion precision, deletion F1, addition F1)`` for one n-gram order."""
    # Tokens of this order's complex n-grams (empty when the sentence is shorter than the order).
    src_tokens = {token for gram in src for token in gram}
    src_rep = _scaled(src, nrefs)
    out_rep = _scaled(out, nrefs)

    kept = src_rep & out_rep
    kept_good = kept & refs
    kept_all = src_rep & refs
    keep_p = _ratio(sum(kept_good[g] / kept[g] for g in kept_good), len(kept))
    keep_r = _ratio(sum(kept_good[g] / kept_all[g] for g in kept_good), len(kept_all))
    keep = 2 * keep_p * keep_r / (keep_p + keep_r) if keep_p > 0 or keep_r > 0 else 0.0

    deleted = src_rep - out_rep
    deleted_good = deleted - refs
    deleted_all = src_rep - refs
    credit = sum(deleted_good[g] / deleted[g] for g in deleted_good)
    del_p = _ratio(credit, len(deleted))
    del_r = _ratio(credit, len(deleted_all))  # the script divides the precision's numerator here too
    del_f = 2 * del_p * del_r / (del_p + del_r) if del_p > 0 or del_r > 0 else 0.0

    added = set(out) - set(src)
    added_all = set(refs) - set(src)
    good = sum(
        1
        for gram in added & set(refs)
        if any(token not in src_tokens for token in gram) or not _is_subsequence(gram, src_words)
    )
    add_p = _ratio(good, len(added))
    add_r = _ratio(good, len(added_all))
    add = 2 * add_p * add_r / (add_p + add_r) if add_p > 0 or add_r > 0 else 0.0
    return keep, del_p, del_f, add


def lens_sari_parts(complex_sentence: str, output: str, references: Sequence[str]) -> dict[str, float]:
    """The LENS evaluation code's sentence SARI parts, 0-1: ``keep``, ``del_p``, ``del_f1``, ``add``."""
    src = _lens_grams(complex_sentence)
    out = _lens_grams(output)
    refs: list[Counter[tuple[str, ...]]] = [Counter() for _ in range(NGRAM_ORDER)]
    for ref in references:
        for n, grams in enumerate(_lens_grams(ref)):
            refs[n].update(grams)
    src_words = complex_sentence.lower().split()
    totals = [0.0, 0.0, 0.0, 0.0]
    for n in range(NGRAM_ORDER):
        for k, part in enumerate(_lens_order(src[n], out[n], refs[n], len(references), src_words)):
            totals[k] += part
    keep, del_p, del_f, add = (total / NGRAM_ORDER for total in totals)
    return {"keep": keep, "del_p": del_p, "del_f1": del_f, "add": add}


@register("sari", variants=("lens",))
class Sari(Metric):
    """SARI: EASSE's default (``sari``, 0-100) or the LENS paper's sentence SARI (``sari:lens``, 0-1).

    Components: ``add``, ``keep``, ``delete`` (``sari``); ``add``, ``keep``, ``del_p``, ``del_f1``
    (``sari:lens``, whose value uses ``del_p``).
    """

    needs_references = True
    higher_is_better = True
    needs_complex = True

    def __init__(self, variant: str | None = None, **options: Any) -> None:
        if options:
            raise TypeError(f"sari takes no options, got {sorted(options)}")
        self.variant = variant
        self.name = "sari:lens" if variant == "lens" else "sari"

    @property
    def signature(self) -> str:
        if self.variant == "lens":
            return f"sari:lens|case:lower|tok:nltk-punkt|del:precision|nrefs:var|version:{_version()}"
        return f"sari:easse|case:lower|tok:13a|del:f1|nrefs:var|sacrebleu:{sacrebleu.__version__}|version:{_version()}"

    def _score(self, items: Sequence[Item]) -> list[Score]:
        out: list[Score] = []
        for item in items:
            if self.variant == "lens":
                parts = lens_sari_parts(item.complex, item.output, item.references)
                value = (parts["keep"] + parts["del_p"] + parts["add"]) / 3
                out.append(Score(value=value, components=parts))
            else:
                add, keep, delete = easse_sari_parts(item.complex, item.output, item.references)
                out.append(
                    Score(value=(add + keep + delete) / 3, components={"add": add, "keep": keep, "delete": delete})
                )
        return out


def _version() -> str:
    from metrics.suite import SUITE_VERSION

    return SUITE_VERSION
