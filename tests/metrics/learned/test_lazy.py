"""The family's packages load their names on first use, keep them, and list them in dir()."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["metrics.learned", "metrics.lens", "metrics.referee", "metrics.siera"])
def test_every_exported_name_resolves_and_is_listed(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is getattr(module, name)
        assert name in vars(module)  # kept: the next look-up is an ordinary one
        assert name in dir(module)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'missing'"):
        module.missing  # noqa: B018
