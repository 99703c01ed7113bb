"""Clean selection (issue 47): every choice is made by cross-validation over SimpEval_past's sources, and
nothing made while choosing may read a test set.

* :func:`selection_guard` is a context manager under which opening any test-set file (SimpEval_2022 and its
  reference, SimpDA_2022, SimpLikert_2022, Simplicity-DA and its references, under the data folder) raises
  :class:`SelectionLeak`. Selection code runs inside it; the final evaluation, once per configuration,
  runs after it.
* :func:`past_source_folds` cuts SimpEval_past into cross-validation folds grouped by source: a source's 24
  outputs are all in one fold's held-out part.
* :func:`simplicity_da_heldout` is Simplicity-DA's evaluation subset: the outputs whose source SimpEval_past
  does not have (434 of its 600, on 220 of its 302 sources), since the rest share sources with the
  training data.

The guard patches ``open`` (``builtins.open``, ``io.open``, which ``pathlib`` and ``csv`` readers go through)
and ``os.open`` for the process while it is active: selection runs in one thread.
"""

from __future__ import annotations

import builtins
import io
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.datasets import (
    AspectRated,
    _norm,
    cross_validation_folds,
    load_simpeval_past,
    load_simplicity_da_aspects,
)
from metrics.lens.types import Sample

TEST_SET_FILES: tuple[str, ...] = (
    "simpeval/simpeval_2022.csv",
    "simpeval/simpeval_2022_references.src",
    "simpeval/simpeval_2022_references.dst",
    "simpeval/simpDA_2022.csv",
    "simpeval/simplikert_2022.csv",
    "simplicity_da/simplicity_DA.csv",
    "simplicity_da/references.src",
    "simplicity_da/references.dst",
)
"""The test sets' files, relative to the data folder (``SIMPEVAL_DATA_DIR``): SimpEval_2022 (with its
reference), SimpDA_2022 and SimpLikert_2022 (the same 360 outputs, rated by crowd workers), Simplicity-DA."""
SIMPLICITY_DA_HELDOUT = 434
"""Simplicity-DA's outputs whose source SimpEval_past does not have (measured on the released files)."""


class SelectionLeak(PermissionError):
    """A test-set file was opened while a choice was being made."""


@dataclass
class GuardLog:
    """What a guarded block opened under the data folder (paths, resolved): what selection read."""

    forbidden: frozenset[str]
    opened: list[str] = field(default_factory=list)


def forbidden_paths(root: Path) -> frozenset[str]:
    """The resolved paths of :data:`TEST_SET_FILES` under ``root`` (whether they exist or not)."""
    return frozenset(os.path.realpath(root / name) for name in TEST_SET_FILES)


def _path_of(target: Any) -> str | None:
    if isinstance(target, int):  # a file descriptor: opened already
        return None
    try:
        return str(os.path.realpath(os.fspath(target)))
    except TypeError:
        return None


@contextmanager
def selection_guard(root: Path) -> Iterator[GuardLog]:
    """Within the block, opening a test-set file under ``root`` raises :class:`SelectionLeak` naming it;
    every other file opens as usual (those under ``root`` are listed in the yielded log)."""
    log = GuardLog(forbidden_paths(root))
    inside = os.path.realpath(root) + os.sep
    real_open, real_os_open = builtins.open, os.open

    def check(target: Any) -> None:
        path = _path_of(target)
        if path is None:
            return
        if path in log.forbidden:
            raise SelectionLeak(f"selection read a test-set file: {path}; choices are made by cross-validation on "
                                "SimpEval_past, and the test sets are read once, after selection")
        if path.startswith(inside):
            log.opened.append(path)

    def guarded_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        check(file)
        return real_open(file, *args, **kwargs)

    def guarded_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        check(path)
        return real_os_open(path, *args, **kwargs)

    builtins.open = io.open = guarded_open
    os.open = guarded_os_open
    try:
        yield log
    finally:
        builtins.open = io.open = real_open
        os.open = real_os_open


def past_source_folds(samples: Sequence[Sample], folds: int, seed: int = 0) -> list[tuple[list[Sample], list[Sample]]]:
    """(train, held-out) cross-validation folds over SimpEval_past grouped by source: each source's outputs are
    held out together, in exactly one fold (``experiments.datasets.cross_validation_folds``)."""
    return cross_validation_folds(samples, folds, seed)


def simplicity_da_heldout(root: Path, past: Sequence[Sample] | None = None) -> list[AspectRated]:
    """Simplicity-DA's outputs whose source SimpEval_past does not have (:data:`SIMPLICITY_DA_HELDOUT`): the
    ones a metric trained on SimpEval_past may be evaluated on. Reads a test set: call it after selection."""
    past_sources = {_norm(s.complex) for s in (load_simpeval_past(root) if past is None else past)}
    return [row for row in load_simplicity_da_aspects(root) if _norm(row.complex) not in past_sources]


def cross_validate(
    samples: Sequence[Sample], evaluate: Callable[[list[Sample], list[Sample]], float], *, folds: int,
    seed: int = 0,
) -> list[float]:
    """``evaluate(train, heldout)`` on each fold of :func:`past_source_folds` (a figure per fold)."""
    return [evaluate(train, heldout) for train, heldout in past_source_folds(samples, folds, seed)]
