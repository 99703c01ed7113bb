"""Fields that apps above ``evaluation`` add to every output of the JSONL export.

``evaluation`` cannot import those apps (``metrics`` imports ``evaluation``), so they register here from
``AppConfig.ready``. A registration names its function by dotted path and is imported on the first export,
so registering at start-up loads nothing of the registering app's services.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.utils.module_loading import import_string

if TYPE_CHECKING:
    from annotation.models import Campaign

OutputExtra = Callable[["Campaign"], dict[int, dict[str, Any]]]
"""``extra(campaign)`` -> ``{output pk: {field: value}}``."""

_REGISTERED: dict[str, str] = {}


def register_output_extra(key: str, dotted_path: str) -> None:
    """Add the fields of the function at ``dotted_path`` (an :data:`OutputExtra`) under ``key``."""
    _REGISTERED[key] = dotted_path


def output_extras() -> list[OutputExtra]:
    """The registered functions, imported now, in registration order."""
    extras: list[OutputExtra] = [import_string(path) for path in _REGISTERED.values()]
    return extras
