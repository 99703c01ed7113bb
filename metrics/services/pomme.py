"""POMME's default language models for the Django layer: built from the configured data on first need."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from core.errors import ServiceError
from metrics.suite.pomme import build_default, default_lm_dir


def pomme_lms_ensure() -> Path:
    """The folder of POMME's default n-gram LMs, trained now (about 10 s) if they are not there yet.

    Raises:
        ServiceError: they are missing and ASSET validation is not under ``SIMPEVAL_DATA_DIR``.
    """
    folder = default_lm_dir()
    if (folder / "reference.json").is_file():
        return folder
    data_dir = Path(settings.SIMPEVAL_DATA_DIR)
    if not (data_dir / "asset" / "asset.valid.orig").is_file():
        raise ServiceError(
            f"pomme: no language models in {folder} and no ASSET validation under {data_dir / 'asset'} to train "
            "them on (set SIMPEVAL_DATA_DIR, or POMME_LM_DIR to a built artefact)",
            field="metrics",
        )
    return build_default(data_dir, folder)
