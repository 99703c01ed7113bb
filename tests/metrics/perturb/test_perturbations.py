"""Each perturbation on hand-written sentences: 0%, 50%, 100%, determinism, and no eligible span."""

from __future__ import annotations

import pytest

from metrics.perturb import OUT_OF_DOMAIN, REGISTRY, Context, PerturbationError, lens_systems, perturb
from metrics.perturb.lexicon import VerbLexicon, inflect, regular_form, verb_lexicon
from metrics.perturb.perturbations import clause_spans

TEXT = "The company has increased its sales by 25 percent in France, and it bought two factories in Germany."
SOURCE = "In 2019, the firm increased its sales by 25 percent in France and purchased two factories in Germany."
SIMPLE = "The company sold 25 percent more in France. It bought two factories in Germany."
CONTEXT = Context(
    source=SOURCE,
    references=("The firm sold more in France.", "It bought factories in Germany."),
    simplification=SIMPLE,
    in_domain=("Paris is the capital of France.", "The river flows north through the valley."),
    out_of_domain=OUT_OF_DOMAIN,
    entities={"GPE": ("Spain", "Italy", "France"), "ORG": ("Acme",)},
)
BARE = "Look at this."  # no number, no entity, no verb with an antonym


def run(name: str, magnitude: float, seed: int = 3, text: str = TEXT):
    return perturb(name, SOURCE if name == "simplify" else text, magnitude=magnitude, seed=seed, context=CONTEXT)


def test_the_twelve_names_and_their_criteria() -> None:
    assert {name: p.criterion for name, p in REGISTRY.items()} == {
        "delete": "informativeness", "add_out_of_domain": "informativeness", "add_in_domain": "informativeness",
        "simplify": "simplification", "reorder": "coherence", "number_swap": "faithfulness",
        "entity_swap": "faithfulness", "synonym_verb_swap": "faithfulness", "antonym_verb_swap": "faithfulness",
        "negate": "faithfulness", "copy": "lens", "split_middle": "lens",
    }
    assert REGISTRY["simplify"].expected == "up" and REGISTRY["synonym_verb_swap"].expected == "none"
    assert REGISTRY["negate"].expected == "down"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_zero_percent_changes_nothing_and_is_deterministic(name: str) -> None:
    zero = run(name, 0)
    assert zero.text == (SOURCE if name == "simplify" else TEXT)
    assert zero.applied == 0 and zero.changes == () and zero.eligible > 0 and zero.skipped is None
    assert run(name, 50, seed=7) == run(name, 50, seed=7)
    full = run(name, 100)
    assert (full.text != zero.text and full.applied == full.eligible) or name.startswith("add_")
    half = run(name, 50)
    if name.startswith("add_"):
        assert 0 < half.applied <= full.applied
    else:  # half of the eligible spans, a half rounded up
        assert half.applied == (half.eligible + 1) // 2 and half.eligible == full.eligible


def test_delete_removes_the_most_salient_content_words_first() -> None:
    half = run("delete", 50)
    assert half.eligible == 10 and half.applied == 5
    removed = {c.before for c in half.changes}
    assert {"France", "Germany", "sales"} <= removed  # words the references share go first
    assert "factories" not in half.text.split() or "bought" in half.text
    assert run("delete", 100).text == "The has its by in , and it in ."


def test_additions_add_as_many_words_as_the_text_has_at_full_magnitude() -> None:
    full = run("add_out_of_domain", 100)
    added = full.changes[0].after
    assert full.text.startswith(TEXT) and len(added.split()) == len(TEXT.split()) == full.applied
    assert len(run("add_out_of_domain", 50).changes[0].after.split()) == 9
    assert run("add_in_domain", 100).changes[0].after.split()[0] in {"Paris", "The"}
    with pytest.raises(PerturbationError, match="in-domain"):
        perturb("add_in_domain", TEXT, magnitude=50, seed=1, context=Context())


def test_simplify_and_copy_end_at_the_other_version() -> None:
    assert run("simplify", 100).text == SIMPLE
    half = run("simplify", 50).text
    assert half not in (SOURCE, SIMPLE)
    assert run("copy", 100).text == SOURCE
    with pytest.raises(PerturbationError, match="simplification"):
        perturb("simplify", TEXT, magnitude=50, seed=1)
    assert clause_spans(["A", ",", "b", "and", "c", ";", "d"]) == [(0, 2), (2, 3), (3, 6), (6, 7)]


def test_reorder_moves_the_chosen_words_and_keeps_the_full_stop() -> None:
    half = run("reorder", 50)
    assert sorted(half.text.rstrip(".").split()) == sorted(TEXT.rstrip(".").split()) and half.text.endswith(".")
    assert half.applied == 9 and len(half.changes) >= 2


def test_faithfulness_swaps() -> None:
    number = run("number_swap", 100)
    assert number.eligible == 1 and 26 <= int(number.changes[0].after) <= 30
    entity = run("entity_swap", 100)
    assert {c.before for c in entity.changes} == {"France", "Germany"}
    assert all(c.after in {"Spain", "Italy", "France"} and c.after != c.before for c in entity.changes)
    assert run("synonym_verb_swap", 100).text == TEXT.replace("bought", "purchased")
    assert run("antonym_verb_swap", 100).text == TEXT.replace("increased", "decreased").replace("bought", "sold")
    assert run("negate", 100).text == TEXT.replace("has increased", "has not increased").replace(
        "bought", "did not buy"
    )
    assert perturb("negate", "She is happy.", magnitude=100, seed=0).text == "She is not happy."


def test_split_in_the_middle() -> None:
    assert run("split_middle", 100).text == (
        "The company has increased its sales by 25 percent. In France, and it bought two factories in Germany."
    )


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("number_swap", "no number"),
        ("entity_swap", "no named entity"),
        ("antonym_verb_swap", "no verb with a WordNet antonym"),
        ("split_middle", "no sentence of four words"),
        ("reorder", "fewer than two different words"),
    ],
)
def test_no_eligible_span_is_reported(name: str, why: str) -> None:
    text = "Go." if name == "reorder" else BARE
    result = perturb(name, text, magnitude=100, seed=1, context=CONTEXT)
    assert result.no_eligible_span and result.eligible == 0 and result.applied == 0
    assert result.skipped is not None and why in result.skipped and result.text == text


def test_magnitude_is_checked() -> None:
    with pytest.raises(PerturbationError, match="between 0 and 100"):
        perturb("delete", TEXT, magnitude=150, seed=1)
    with pytest.raises(PerturbationError, match="unknown perturbation"):
        perturb("shuffle", TEXT, magnitude=10, seed=1)


def test_lens_figure_systems() -> None:
    systems = lens_systems(SOURCE, TEXT, seed=1)
    assert systems["Copy"] == SOURCE and systems["Human"] == TEXT
    assert len(systems["Drop"].split()) == len(SOURCE.split()) - 2  # 10% of 17 words, rounded
    assert sorted(systems["Scramble"].split()) != SOURCE.split() or systems["Scramble"] != SOURCE
    assert systems["Split"].count(".") == 2


def test_wordnet_lexicon_and_inflection() -> None:
    lexicon = verb_lexicon()
    assert "decrease" in lexicon.antonyms_of("increase") and "purchase" in lexicon.synonyms_of("buy")
    assert [inflect("buy", tag, lexicon) for tag in ("VBD", "VBZ", "VBG", "VB")] == ["bought", "buys", "buying", "buy"]
    assert inflect("carry", "VBD", lexicon) == "carried" and inflect("make", "VBG", lexicon) == "making"


# base -> (VBD, VBG, VBZ) by spelling rules alone, on hand-written verbs
REGULAR = {
    "stop": ("stopped", "stopping", "stops"),  # one syllable, vowel + consonant: doubled
    "plan": ("planned", "planning", "plans"),
    "quiz": ("quizzed", "quizzing", "quizzes"),  # the u of qu is no vowel
    "rain": ("rained", "raining", "rains"),  # two vowels: not doubled
    "fix": ("fixed", "fixing", "fixes"),  # x, w, y never double
    "show": ("showed", "showing", "shows"),
    "visit": ("visited", "visiting", "visits"),  # two syllables: not from spelling
    "hope": ("hoped", "hoping", "hopes"),  # -e drops
    "agree": ("agreed", "agreeing", "agrees"),  # -ee keeps it before -ing
    "dye": ("dyed", "dyeing", "dyes"),
    "die": ("died", "dying", "dies"),  # -ie becomes -y before -ing
    "cry": ("cried", "crying", "cries"),  # consonant + y
    "play": ("played", "playing", "plays"),  # vowel + y
    "panic": ("panicked", "panicking", "panics"),  # -ic takes a k
}


@pytest.mark.parametrize("base", sorted(REGULAR))
def test_regular_spelling_rules(base: str) -> None:
    assert tuple(regular_form(base, tag) for tag in ("VBD", "VBG", "VBZ")) == REGULAR[base]
    assert regular_form(base, "VBN") == REGULAR[base][0] and regular_form(base, "VB") == base
    # With no exception list at all, inflect follows the same rules (no "stoped").
    assert inflect(base, "VBD", VerbLexicon()) == REGULAR[base][0]


def test_inflection_with_wordnet_exceptions() -> None:
    lexicon = verb_lexicon()
    table = {tag: [inflect(v, tag, lexicon) for v in ("admit", "show", "go", "begin", "cut", "run", "have", "be")]
             for tag in ("VBD", "VBN", "VBZ")}
    assert table["VBD"] == ["admitted", "showed", "went", "began", "cut", "ran", "had", "was"]
    assert table["VBN"] == ["admitted", "shown", "gone", "begun", "cut", "run", "had", "been"]
    assert table["VBZ"] == ["admits", "shows", "goes", "begins", "cuts", "runs", "has", "is"]
    assert inflect("admit", "VBG", lexicon) == "admitting" and inflect("ski", "VBD", lexicon) == "skied"
