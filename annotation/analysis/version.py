"""Which engine made a stored analysis, and whether it ran without the token encoder.

Kept apart from the engine so that code reading stored analyses (selectors, admin) does not load numpy and
rapidfuzz to compare a version string.
"""

from __future__ import annotations

ENGINE_VERSION = "1.0.0"
DEGRADED_SUFFIX = "+lexical"
"""Appended to the engine version of an analysis made without the token encoder (it failed)."""


def is_degraded_version(version: str) -> bool:
    """Whether a stored engine version marks an analysis made without the token encoder."""
    return version.endswith(DEGRADED_SUFFIX)
