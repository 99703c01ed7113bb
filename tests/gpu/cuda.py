"""The fixture every test of ``tests/gpu`` shares, as a plugin (those tests run with ``--noconftest``): each test
module names it in ``pytest_plugins`` and imports nothing from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny import tiny_bert


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny encoder, written once per test module."""
    return tiny_bert(tmp_path_factory.mktemp("tiny-bert"))
