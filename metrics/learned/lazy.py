"""Package names loaded on first use (PEP 562), so importing a package does not import what its modules need."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping


def lazy_exports(
    package: str, homes: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose names live in other modules.

    Args:
        package: the package's ``__name__``.
        homes: module path -> the names it gives the package.

    Returns:
        ``__getattr__``, which imports a name's home on first use and keeps the value in the package (so the
        next look-up is an ordinary one), and ``__dir__``, the package's globals with every exported name.
    """
    home_of = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> object:
        module = home_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(home_of))

    return __getattr__, __dir__
