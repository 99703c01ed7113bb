"""The twelve perturbations (APPLS §4 at sentence level, plus the LENS paper's Figure 2 systems).

Every function takes ``(text, magnitude, rng, context)`` and returns ``(text, eligible, applied,
changes, skipped)``; ``rng`` orders the eligible spans once, and the first ``share(magnitude,
eligible)`` of them are changed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from metrics.perturb.base import Change, Context, PerturbationError, register, share
from metrics.perturb.lexicon import inflect, verb_lexicon
from metrics.perturb.nlp import parse

Result = tuple[str, int, int, list[Change], str | None]

CONTENT_POS = frozenset({"NOUN", "PROPN", "VERB", "ADJ", "ADV", "NUM"})
SWAPPABLE_ENTITIES = frozenset(
    {"PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE"}
)
_NUMBER = re.compile(r"^\d{1,3}(,\d{3})+$|^\d+$")
_CLAUSE_END = (",", ";", ":")
_CLAUSE_START = frozenset({"and", "but", "or", "which", "who", "whom", "whose", "while", "because", "although",
                           "whereas", "where", "when", "after", "before", "since", "until"})


def _skip(text: str, why: str) -> Result:
    return text, 0, 0, [], f"no eligible span: {why}"


def _tidy(pieces: Sequence[str]) -> str:
    return re.sub(r"\s+", " ", "".join(pieces)).strip()


def _words(text: str) -> list[str]:
    return text.split()


# --- informativeness --------------------------------------------------------------------------------------


def _salience(lemma: str, context: Context) -> int:
    others = [context.source, *context.references]
    return sum(1 for other in others if lemma in other.lower())


@register("delete", "informativeness", "down", "delete content words, the most salient first (found in most "
          "of the source and other references); Drop of the LENS figure when ordered at random")
def delete(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    doc = parse(text)
    spans = [t for t in doc if t.pos_ in CONTENT_POS]
    if not spans:
        return _skip(text, "no content word")
    order = sorted(spans, key=lambda t: (-_salience(t.lemma_.lower(), context), rng.random()))
    chosen = order[: share(magnitude, len(spans))]
    pieces = [t.text_with_ws for t in doc]
    for token in chosen:
        pieces[token.i] = ""
    changes = [Change("delete", t.text, "") for t in sorted(chosen, key=lambda t: t.i)]
    return _tidy(pieces), len(spans), len(chosen), changes, None


def drop_random(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    """The LENS figure's Drop: ``magnitude`` percent of the words, chosen at random."""
    words = _words(text)
    if not words:
        return _skip(text, "no word")
    positions = list(range(len(words)))
    rng.shuffle(positions)
    chosen = set(positions[: share(magnitude, len(words))])
    changes = [Change("delete", words[i], "") for i in sorted(chosen)]
    return " ".join(w for i, w in enumerate(words) if i not in chosen), len(words), len(chosen), changes, None


def _add(text: str, magnitude: float, rng: random.Random, pool: Sequence[str], what: str) -> Result:
    words = _words(text)
    if not words:
        return _skip(text, "empty text")
    candidates = [s for s in pool if s.strip() and s.strip() != text.strip()]
    if not candidates:
        raise PerturbationError(f"no {what} sentences given to add (context.{what.replace('-', '_')})")
    order = list(candidates)
    rng.shuffle(order)
    wanted = share(magnitude, len(words))
    added: list[str] = []
    left = wanted
    for sentence in order:
        if left <= 0:
            break
        piece = _words(sentence)
        if len(piece) > left:
            piece = [*piece[:left]]
            piece[-1] = piece[-1].rstrip(".,;:") + "."
        added.append(" ".join(piece))
        left -= len(piece)
    if not added:
        return text, len(words), 0, [], None
    insertion = " ".join(added)
    return f"{text.rstrip()} {insertion}", len(words), wanted - max(left, 0), [Change("insert", "", insertion)], None


@register("add_out_of_domain", "informativeness", "down", "append sentences of an unrelated domain, as many "
          "words as the text has at 100% (the last one cut short)")
def add_out_of_domain(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    return _add(text, magnitude, rng, context.out_of_domain, "out-of-domain")


@register("add_in_domain", "informativeness", "down", "append sentences of other sources of the same corpus, "
          "as many words as the text has at 100%")
def add_in_domain(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    return _add(text, magnitude, rng, context.in_domain, "in-domain")


# --- simplification and copy: move clauses towards another version of the text ---------------------------


def clause_spans(words: Sequence[str]) -> list[tuple[int, int]]:
    """Word ranges ``[start, end)`` of the clauses of a whitespace-tokenised text.

    A clause ends after a word ending in , ; : or at a sentence end, and starts before a coordinating or
    subordinating word (``and``, ``which``, ``because``...).
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for i, word in enumerate(words):
        if i > start and word.lower() in _CLAUSE_START:
            spans.append((start, i))
            start = i
        if word.endswith((*_CLAUSE_END, ".", "?", "!")) and i + 1 > start:
            spans.append((start, i + 1))
            start = i + 1
    if start < len(words):
        spans.append((start, len(words)))
    return spans


def _towards(text: str, magnitude: float, rng: random.Random, target: str) -> Result:
    """Replace a share of ``text``'s clauses by the proportionally aligned part of ``target``.

    Clause ``[a, b)`` of the ``n`` words maps to target words ``[round(m*a/n), round(m*b/n))``: a monotone
    alignment by relative position, so at 100% the result is exactly ``target``.
    """
    words, other = _words(text), _words(target)
    if not words:
        return _skip(text, "empty text")
    spans = clause_spans(words)
    order = list(range(len(spans)))
    rng.shuffle(order)
    chosen = set(order[: share(magnitude, len(spans))])
    n, m = len(words), len(other)
    out: list[str] = []
    changes: list[Change] = []
    for index, (a, b) in enumerate(spans):
        if index in chosen:
            replacement = other[round(m * a / n) : round(m * b / n)]
            out.extend(replacement)
            changes.append(Change("replace", " ".join(words[a:b]), " ".join(replacement)))
        else:
            out.extend(words[a:b])
    return " ".join(out), len(spans), len(chosen), changes, None


@register("simplify", "simplification", "up", "replace a share of the clauses of the complex sentence by the "
          "aligned part of a human simplification (ASSET's, standing in for the paper's GPT simplification)")
def simplify(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    if not context.simplification or not context.simplification.strip():
        raise PerturbationError("simplify needs context.simplification (a human simplification of the text)")
    return _towards(text, magnitude, rng, context.simplification)


# --- coherence ---------------------------------------------------------------------------------------------


@register("reorder", "coherence", "down", "move a share of the words to one another's places (a cycle, so each "
          "chosen word moves; the LENS figure's Scramble at 5%)")
def reorder(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    words = _words(text)
    final = ""
    if words and words[-1][-1:] in {".", "!", "?"}:  # the sentence's end stays where it is
        final = words[-1][-1]
        words[-1] = words[-1][:-1]
    body = [w for w in words if w]
    if len(set(body)) < 2:
        return _skip(text, "fewer than two different words")
    positions = list(range(len(body)))
    rng.shuffle(positions)
    k = share(magnitude, len(body))
    k = 0 if k == 0 else max(2, k)
    chosen = positions[:k]
    out = list(body)
    for j, position in enumerate(chosen):
        out[position] = body[chosen[j - 1]]
    changes = [Change("move", body[p], out[p]) for p in sorted(chosen) if body[p] != out[p]]
    return " ".join(out) + final, len(body), len(chosen), changes, None


# --- faithfulness ------------------------------------------------------------------------------------------


@register("number_swap", "faithfulness", "down", "add 1 to 5 to a share of the numbers")
def number_swap(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    doc = parse(text)
    spans = [t for t in doc if _NUMBER.match(t.text)]
    if not spans:
        return _skip(text, "no number")
    rng.shuffle(spans)
    chosen = spans[: share(magnitude, len(spans))]
    pieces = [t.text_with_ws for t in doc]
    changes = []
    for token in sorted(chosen, key=lambda t: t.i):
        value = int(token.text.replace(",", "")) + rng.randint(1, 5)
        new = f"{value:,}" if "," in token.text else str(value)
        pieces[token.i] = new + token.whitespace_
        changes.append(Change("replace", token.text, new))
    return _tidy(pieces), len(spans), len(chosen), changes, None


@register("entity_swap", "faithfulness", "down", "replace a share of the named entities by another entity of "
          "the same type from the corpus")
def entity_swap(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    doc = parse(text)
    spans = []
    for ent in doc.ents:
        if ent.label_ not in SWAPPABLE_ENTITIES:
            continue
        candidates = sorted({c for c in context.entities.get(ent.label_, ()) if c.lower() != ent.text.lower()})
        if candidates:
            spans.append((ent, candidates))
    if not spans:
        return _skip(text, "no named entity with another of its type in the corpus")
    rng.shuffle(spans)
    chosen = sorted(spans[: share(magnitude, len(spans))], key=lambda pair: pair[0].start_char)
    out, last, changes = [], 0, []
    for ent, candidates in chosen:
        new = rng.choice(candidates)
        out.append(text[last : ent.start_char] + new)
        last = ent.end_char
        changes.append(Change("replace", ent.text, new))
    out.append(text[last:])
    return "".join(out), len(spans), len(chosen), changes, None


def _verb_swap(text: str, magnitude: float, rng: random.Random, antonyms: bool) -> Result:
    lexicon = verb_lexicon()
    doc = parse(text)
    spans = []
    for token in doc:
        if token.pos_ != "VERB":
            continue
        options = (lexicon.antonyms_of if antonyms else lexicon.synonyms_of)(token.lemma_)
        if options:
            spans.append((token, options[:3]))
    if not spans:
        return _skip(text, f"no verb with a WordNet {'antonym' if antonyms else 'synonym'}")
    rng.shuffle(spans)
    chosen = spans[: share(magnitude, len(spans))]
    pieces = [t.text_with_ws for t in doc]
    changes = []
    for token, options in sorted(chosen, key=lambda pair: pair[0].i):
        new = inflect(rng.choice(options), token.tag_, lexicon)
        if token.text[:1].isupper():
            new = new[:1].upper() + new[1:]
        pieces[token.i] = new + token.whitespace_
        changes.append(Change("replace", token.text, new))
    return _tidy(pieces), len(spans), len(chosen), changes, None


@register("synonym_verb_swap", "faithfulness", "none", "replace a share of the verbs by a WordNet synonym "
          "(an ideal metric does not move)")
def synonym_verb_swap(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    return _verb_swap(text, magnitude, rng, antonyms=False)


@register("antonym_verb_swap", "faithfulness", "down", "replace a share of the verbs by a WordNet antonym")
def antonym_verb_swap(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    return _verb_swap(text, magnitude, rng, antonyms=True)


_DO = {"VBD": "did", "VBZ": "does", "VBP": "do", "VB": "do"}


@register("negate", "faithfulness", "down", "negate a share of the clause heads (the root and verbs "
          "coordinated with it): 'has not', 'is not', 'did not' + base form")
def negate(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    doc = parse(text)
    heads = [
        t for t in doc
        if t.pos_ in ("VERB", "AUX")
        and (t.dep_ == "ROOT" or (t.dep_ == "conj" and t.head.pos_ in ("VERB", "AUX")))
        and not any(c.dep_ == "neg" for c in t.children)
    ]
    if not heads:
        return _skip(text, "no clause head to negate")
    rng.shuffle(heads)
    chosen = heads[: share(magnitude, len(heads))]
    pieces = [t.text_with_ws for t in doc]
    changes = []
    for head in chosen:
        auxiliaries = [c for c in head.children if c.dep_ in ("aux", "auxpass") and c.i < head.i]
        if auxiliaries or head.pos_ == "AUX":
            target = auxiliaries[0] if auxiliaries else head
            pieces[target.i] = f"{target.text} not{target.whitespace_ or ' '}"
            changes.append(Change("insert", target.text, f"{target.text} not"))
        elif head.tag_ in _DO:
            new = f"{_DO[head.tag_]} not {head.lemma_}"
            if head.text[:1].isupper():
                new = new[:1].upper() + new[1:]
            pieces[head.i] = new + head.whitespace_
            changes.append(Change("replace", head.text, new))
        else:
            pieces[head.i] = f"not {head.text_with_ws}"
            changes.append(Change("insert", head.text, f"not {head.text}"))
    return _tidy(pieces), len(heads), len(chosen), changes, None


# --- the LENS figure's Copy and Split ---------------------------------------------------------------------


@register("copy", "lens", "down", "replace a share of the clauses by the aligned part of the complex sentence "
          "(the LENS figure's Copy at 100%: a system that changes nothing)")
def copy(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    if not context.source.strip():
        raise PerturbationError("copy needs context.source (the complex sentence)")
    return _towards(text, magnitude, rng, context.source)





@register("split_middle", "lens", "down", "end a share of the sentences with a period in their middle and "
          "capitalise the next word (the LENS figure's Split)")
def split_middle(text: str, magnitude: float, rng: random.Random, context: Context) -> Result:
    doc = parse(text)
    sentences = [s for s in doc.sents if len(s.text.split()) >= 4]
    if not sentences:
        return _skip(text, "no sentence of four words or more")
    rng.shuffle(sentences)
    chosen = sorted(sentences[: share(magnitude, len(sentences))], key=lambda s: s.start_char)
    out, last, changes = [], 0, []
    for sentence in chosen:
        words = sentence.text.split()
        middle = len(words) // 2
        left, right = " ".join(words[:middle]), " ".join(words[middle:])
        new = f"{left.rstrip(',;:')}. {right[:1].upper()}{right[1:]}"
        out.append(text[last : sentence.start_char] + new)
        last = sentence.start_char + len(sentence.text)
        changes.append(Change("insert", f"{words[middle - 1]} {words[middle]}", new))
    out.append(text[last:])
    return "".join(out), len(sentences), len(chosen), changes, None
