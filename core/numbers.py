"""Whole numbers typed into a page's form: one rule for every field that takes a count.

``str.isdigit()`` holds for ``"²"`` and ``"٣"``, which ``int()`` then refuses or reads as a digit the person
never typed, and thirty nines pass it too; a count arrives as ASCII digits of a bounded length or is a 400
(a page's error message) naming the field. The service that takes the count checks its range.
"""

from __future__ import annotations

import re

from core.errors import ServiceError

MAX_DIGITS = 12  # more than any count of this app; the service's own bound says the exact limit
_DIGITS = re.compile(r"[0-9]+")


def whole_number(raw: str, *, field: str) -> int | None:
    """The count typed as `raw` (surrounding spaces ignored), None when empty; a ServiceError naming `field`
    for anything but up to ``MAX_DIGITS`` ASCII digits."""
    text = raw.strip()
    if not text:
        return None
    if len(text) > MAX_DIGITS or not _DIGITS.fullmatch(text):
        raise ServiceError(f"{field} must be a whole number of at most {MAX_DIGITS} digits (0-9)", field=field)
    return int(text)


def duration_words(seconds: int) -> str:
    """A length of time for a sentence: whole days when it is whole days, else hours, else minutes
    ("3 days", "1 day", "12 hours", "90 minutes"), never "0 days"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and (seconds % size == 0 or unit == "minute"):
            n = seconds // size
            return f"{n} {unit}{'' if n == 1 else 's'}"
    return f"{seconds} second{'' if seconds == 1 else 's'}"


YES_WORDS = frozenset({"1", "true", "yes", "on"})
NO_WORDS = frozenset({"0", "false", "no", "off"})
"""The words a flag is written with, in any case: the one list of forms, JSON bodies and settings
(``config.settings.base.env_bool``)."""


def flag_word(text: str) -> bool | None:
    """``text`` (surrounding spaces and case ignored) as a flag: True or False, None when it is not one of
    ``YES_WORDS`` or ``NO_WORDS``."""
    word = text.strip().lower()
    return True if word in YES_WORDS else False if word in NO_WORDS else None


def yes_or_no(raw: object, *, field: str) -> bool:
    """A flag from a form or a JSON body: ``true``/``false`` (JSON), ``1``/``0``, ``true``/``false``,
    ``yes``/``no``, ``on``/``off`` (any case, ``flag_word``); absent (None) or empty is False; anything else
    a ServiceError naming `field`."""
    if raw is None or isinstance(raw, bool):
        return bool(raw)
    text = str(raw)
    if not text.strip():
        return False
    flag = flag_word(text)
    if flag is not None:
        return flag
    raise ServiceError(f"{field} must be true or false", field=field)
