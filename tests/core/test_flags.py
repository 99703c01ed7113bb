"""A flag is read with one list of words (``core.numbers.flag_word``) by the pages, the API and the
settings (``env_bool``): a word one accepts is accepted by all."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings.base import env_bool
from core.errors import ServiceError
from core.numbers import NO_WORDS, YES_WORDS, flag_word, yes_or_no


@pytest.mark.parametrize("word", sorted(YES_WORDS | NO_WORDS))
def test_forms_api_and_settings_read_the_same_words(word: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for written in (word, f" {word.upper()} "):
        monkeypatch.setenv("RR_TEST_FLAG", written)
        assert env_bool("RR_TEST_FLAG") is yes_or_no(written, field="f") is flag_word(written) is (word in YES_WORDS)


def test_a_new_word_reaches_every_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("core.numbers.YES_WORDS", YES_WORDS | {"oui"})
    monkeypatch.setenv("RR_TEST_FLAG", "oui")
    assert env_bool("RR_TEST_FLAG") is True and yes_or_no("Oui", field="f") is True


def test_other_words_are_refused_by_both(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RR_TEST_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured):
        env_bool("RR_TEST_FLAG")
    with pytest.raises(ServiceError):
        yes_or_no("maybe", field="f")
    assert yes_or_no("", field="f") is False and flag_word("") is None
