"""Timings of the statistics core on the released SimpEval data, beside the ``krippendorff`` package.

Usage: ``python benchmarks/bench_stats.py`` (data folder from ``SIMPEVAL_DATA_DIR``,
default ``../shared/data``).  Prints figures; asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from importlib.metadata import version
from pathlib import Path

import krippendorff
import numpy as np
import numpy.typing as npt

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from config.datasets import simpeval_data_dir  # noqa: E402
from evaluation.stats.agreement import krippendorff_alpha, rating_matrix  # noqa: E402
from evaluation.stats.records import simpeval_records  # noqa: E402
from evaluation.stats.report import build_report  # noqa: E402

DATA_DIR = simpeval_data_dir()


def best_of(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Best and median wall time in seconds over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def line(label: str, timing: tuple[float, float]) -> None:
    best, median = timing
    print(f"  {label:<54s} best {best * 1e3:9.2f} ms   median {median * 1e3:9.2f} ms")


def package_alpha(values: npt.NDArray[np.float64]) -> float:
    return float(krippendorff.alpha(reliability_data=values, level_of_measurement="interval"))


def bench_dataset(path: Path) -> None:
    records = simpeval_records(path)
    raw = rating_matrix(records, field="raw")
    z = rating_matrix(records, field="z")
    n_raters, n_units = raw.values.shape
    print(f"\n{path.stem}: {len(records)} ratings, {n_units} outputs x {n_raters} raters")
    line("full report (n_boot=1000, seed=0)", best_of(partial(build_report, records, n_boot=1000), 3))
    line("alpha interval raw, ours (matrix given)", best_of(partial(krippendorff_alpha, raw.values), 20))
    line("alpha interval z,   ours (matrix given)", best_of(partial(krippendorff_alpha, z.values), 20))
    line(
        "alpha interval raw, ours (records -> matrix -> alpha)",
        best_of(lambda: krippendorff_alpha(rating_matrix(records).values), 5),
    )
    line("alpha interval raw, krippendorff package", best_of(partial(package_alpha, raw.values), 3))
    distinct = int(np.unique(z.values[~np.isnan(z.values)]).size)
    if distinct <= 2000:
        line("alpha interval z,   krippendorff package", best_of(partial(package_alpha, z.values), 3))
    else:
        # The package builds value x value matrices: 12,000 distinct z-scores need gigabytes.
        print(f"  alpha interval z,   krippendorff package: skipped ({distinct} distinct values)")
    ours, theirs = krippendorff_alpha(raw.values), package_alpha(raw.values)
    print(f"  alpha raw ours {ours:.10f}  package {theirs:.10f}  |diff| {abs(ours - theirs):.1e}")
    ours_z, theirs_z = krippendorff_alpha(z.values), package_alpha(z.values)
    print(f"  alpha z   ours {ours_z:.10f}  package {theirs_z:.10f}  |diff| {abs(ours_z - theirs_z):.1e}")


def main() -> None:
    folder = DATA_DIR / "simpeval"
    if not folder.is_dir():
        print(f"no data in {folder}")
        return
    print(f"cores: {os.cpu_count()}, python {sys.version.split()[0]}, krippendorff {version('krippendorff')}")
    for name in ("simpeval_past", "simpeval_2022"):
        bench_dataset(folder / f"{name}.csv")


if __name__ == "__main__":
    main()
