"""Suite metrics on hand-worked examples (values derived by hand in the comments, or published values)."""

from __future__ import annotations

import pytest
import sacrebleu

from metrics.suite import Item, Score, create_metric
from metrics.suite.gleu import sentence_gleu
from metrics.suite.sari import easse_sari_parts, lens_sari_parts
from metrics.suite.tokenize import nltk_word_tokenize, punkt_sentences, tokenize_13a


def score(name: str, complex_: str, output: str, refs: tuple[str, ...] = ()) -> Score:
    return create_metric(name).score_batch([Item(complex_, output, refs)])[0]


# --- tokenisers -------------------------------------------------------------------------------------


def test_punkt_keeps_abbreviations_and_splits_sentences() -> None:
    text = "dr. smith went to washington d.c. in may. he said hi. then he left."
    assert punkt_sentences(text) == ["dr. smith went to washington d.c. in may.", "he said hi.", "then he left."]


def test_nltk_word_tokens_split_final_periods_per_sentence_and_contractions() -> None:
    # The final period of each Punkt sentence is split off; "won't" -> "wo", "n't"; quotes -> `` ''.
    assert nltk_word_tokenize('It rained. They won\'t say "why".') == (
        "It", "rained", ".", "They", "wo", "n't", "say", "``", "why", "''", ".",
    )  # fmt: skip


def test_13a_tokens() -> None:
    assert tokenize_13a('Hello, world! "Quoted".') == 'Hello , world ! " Quoted " .'


# --- SARI -------------------------------------------------------------------------------------------


def test_easse_sari_by_hand() -> None:
    # complex "a b", output "a c", reference "a c":
    #   1-grams: add {c}: P=R=1 -> 1; keep {a}: 1; delete {b}: 1
    #   2-grams: add {"a c"}: 1; keep: nothing kept by output or reference -> 0; delete {"a b"}: 1
    #   3-, 4-grams: none -> 0
    # add = 2/4, keep = 1/4, delete = 2/4 -> SARI = 100 * (0.5 + 0.25 + 0.5) / 3
    add, keep, delete = easse_sari_parts("A b", "a C", ["a c"])
    assert (add, keep, delete) == pytest.approx((50.0, 25.0, 50.0))
    result = score("sari", "A b", "a C", ("a c",))
    assert result.value == pytest.approx(125 / 3)
    assert result.components == pytest.approx({"add": 50.0, "keep": 25.0, "delete": 50.0})


def test_sari_del_precision_scores_deletion_by_its_precision() -> None:
    # complex "a b c d", output "a", reference "a b". Deleted by the output / by the reference, per order:
    #   1-grams {b, c, d} / {c, d}: P = 2/3, R = 1;  2-grams {ab, bc, cd} / {bc, cd}: P = 2/3, R = 1
    #   3-grams and the 4-gram: all deleted by both: P = R = 1
    # deletion precision = (2/3 + 2/3 + 1 + 1) / 4 -> 83.33; F1 = (0.8 + 0.8 + 1 + 1) / 4 -> 90
    default = score("sari", "a b c d", "a", ("a b",))
    precision = score("sari:del-precision", "a b c d", "a", ("a b",))
    assert default.components["delete"] == pytest.approx(90.0)
    assert precision.components["delete"] == pytest.approx(250 / 3)
    assert precision.components["add"] == default.components["add"]
    assert precision.components["keep"] == default.components["keep"]
    assert precision.value == pytest.approx(sum(precision.components.values()) / 3)
    assert "del:precision" in create_metric("sari:del-precision").signature
    assert "del:f1" in create_metric("sari").signature
    with pytest.raises(ValueError, match="'f1' or 'precision'"):
        easse_sari_parts("a b", "a", ["a"], deletion="recall")


def test_lens_sari_differs_from_easse_on_reordered_source_words() -> None:
    # complex "a b c", output "a c", reference "a c".  The added bigram "a c" is made of source words
    # in source order, so the LENS script does not count it as a good addition (add = 0), while EASSE
    # does (add = F1 1 at order 2 -> 1/4 -> 25).
    lens = lens_sari_parts("a b c", "a c", ["a c"])
    assert lens["add"] == 0.0
    add, _, _ = easse_sari_parts("a b c", "a c", ["a c"])
    assert add == pytest.approx(25.0)


def test_lens_sari_uses_deletion_precision() -> None:
    parts = lens_sari_parts("a b c d", "a", ["a b"])
    value = score("sari:lens", "a b c d", "a", ("a b",)).value
    assert value == pytest.approx((parts["keep"] + parts["del_p"] + parts["add"]) / 3)
    assert parts["del_p"] != parts["del_f1"]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        # Values of Wei Xu's sentence SARI (deletion precision) on this example, as EASSE's tests print them.
        ("About 95 you now get in .", 0.2682782411698074),
        ("About 95 species are now agreed .", 0.5889995423074248),
        ("About 95 species are currently agreed .", 0.5071608864657479),
    ],
)
def test_lens_sari_published_values(output: str, expected: float) -> None:
    refs = (
        "About 95 species are currently known .",
        "About 95 species are now accepted .",
        "95 species are now accepted .",
    )
    assert score("sari:lens", "About 95 species are currently accepted .", output, refs).value == pytest.approx(
        expected
    )


def test_sari_of_a_copy_keeps_everything_and_deletes_nothing() -> None:
    result = score("sari", "the cat sat down", "the cat sat down", ("the cat sat down",))
    # Nothing added or deleted by anyone (add, delete 0); every n-gram of orders 1-4 kept (keep 100).
    assert result.components == pytest.approx({"add": 0.0, "keep": 100.0, "delete": 0.0})
    # Three words have no 4-gram: keep is 1 at orders 1-3 and 0 at order 4 -> 75.
    assert score("sari", "the cat sat", "the cat sat", ("the cat sat",)).components["keep"] == pytest.approx(75.0)


# --- GLEU -------------------------------------------------------------------------------------------


def test_gleu_by_hand() -> None:
    # Output: 7 tokens -> 7+6+5+4 = 22 n-grams; reference: 6 tokens -> 18.  Matches: "the" twice.
    # GLEU = 2 / max(22, 18).
    value, best = sentence_gleu("the the the the the the the", ["the cat is on the mat"])
    assert value == pytest.approx(2 / 22)
    assert best == 0


def test_gleu_takes_the_best_reference_and_lowercases() -> None:
    result = score("gleu", "x", "The cat", ("a dog", "the cat"))
    assert result.value == 1.0
    assert result.components["best_reference"] == 1.0


# --- BLEU -------------------------------------------------------------------------------------------


def test_bleu_is_sacrebleu_sentence_bleu() -> None:
    refs = ["the cat is on the mat", "there is a cat on the mat"]
    expected = sacrebleu.sentence_bleu("the cat sat on the mat", refs).score
    assert score("bleu", "x", "the cat sat on the mat", tuple(refs)).value == pytest.approx(expected)
    assert score("bleu", "x", "the cat is on the mat", ("the cat is on the mat",)).value == pytest.approx(100.0)


def test_corpus_bleu_accepts_uneven_references() -> None:
    metric = create_metric("bleu")
    items = [
        Item("x", "the cat sat on the mat", ("the cat sat on the mat", "a cat")),
        Item("x", "hello there", ("hello there",)),
    ]
    assert metric.corpus_score(items).value == pytest.approx(100.0)  # type: ignore[attr-defined]
    assert "level:corpus" in metric.corpus_signature  # type: ignore[attr-defined]


# --- FKGL -------------------------------------------------------------------------------------------


def test_fkgl_by_hand() -> None:
    # textstat 0.7.3 rounds with floor(10 * x + copysign(0.5, x)) / 10.
    # 6 one-syllable words in 1 sentence: 0.39 * 6 + 11.8 * 1.0 - 15.59 = -1.45 -> floor(-15.0) -> -1.5.
    assert score("fkgl", "", "The cat sat on the mat.").value == pytest.approx(-1.5)
    # 14 one-syllable words in 2 sentences: 0.39 * 7 + 11.8 - 15.59 = -1.06 -> floor(-11.1) -> -1.2.
    assert score("fkgl", "", "The cat sat on the mat. The dog ran to the big red barn.").value == pytest.approx(-1.2)


def test_fkgl_needs_no_references_and_lower_is_better() -> None:
    metric = create_metric("fkgl")
    assert not metric.needs_references
    assert not metric.higher_is_better
    assert "textstat-0.7.3" in metric.signature
