"""Coverage per package, from the data `pytest --cov` wrote, with a floor for the cores and services.

Usage: ``.venv/bin/python scripts/coverage_floors.py [--data-file .coverage]``. Prints one line per
package (a file counts in the most specific package listed) and exits 1 when a package with a floor
is below it, naming the package. Floors sit a few points under the coverage measured when they were
set; raise them when coverage rises, never lower them to pass.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import coverage

REPO = Path(__file__).resolve().parent.parent

# package (a folder under the repository) -> floor in percent of statements; None: reported, no floor.
FLOORS: dict[str, float | None] = {  # measured 2026-11-23 (whole suite, SQLite) minus about 3 points
    "annotation/analysis": 93.0,  # 96.0
    "annotation/formats": 86.0,  # 89.1
    "evaluation/stats": 95.0,  # 98.2
    "metrics/lens": 91.0,  # 94.6
    "annotation/services": 89.0,  # 92.4 (89.8 before the tests of the untested paths)
    "evaluation/services": 95.0,  # 98.4
    "metrics/services": 90.0,  # 93.4
    "metrics/suite": 90.0,  # 93.9
    # measured 2026-11-28 (whole suite but the browser tests, PostgreSQL): the learned metrics' packages with
    # about 5 points of margin, the others about 3 (core: about 92 on SQLite, where the server-side prepared
    # statements do not run; frontend: the browser tests, which CI runs, cover more of it).
    "metrics/learned": 89.0,  # 94.3
    "metrics/referee": 92.0,  # 97.0
    "metrics/siera": 90.0,  # 95.5
    "metrics/perturb": 94.0,  # 97.6
    "annotation/rules": 97.0,  # 100.0
    "core": 90.0,  # 96.5
    "annotation": None,
    "evaluation": 95.0,  # 99.0 (the app outside stats and services)
    "metrics": None,
    "frontend": 89.0,  # 93.0
    "config": None,
}


@dataclass
class Tally:
    statements: int = 0
    missing: int = 0

    @property
    def percent(self) -> float:
        return 100.0 if self.statements == 0 else 100.0 * (self.statements - self.missing) / self.statements


def package_of(relative: str) -> str | None:
    """The most specific package of FLOORS holding the file, or None (not reported)."""
    matches = [name for name in FLOORS if relative in (name, name + ".py") or relative.startswith(name + "/")]
    return max(matches, key=len) if matches else None


def tally(data_file: Path) -> dict[str, Tally]:
    cov = coverage.Coverage(data_file=str(data_file))
    cov.load()
    tallies = {name: Tally() for name in FLOORS}
    for filename in cov.get_data().measured_files():
        path = Path(filename)
        if not path.is_file() or "migrations" in path.parts:
            continue
        try:
            relative = path.resolve().relative_to(REPO).as_posix()
        except ValueError:
            continue
        package = package_of(relative)
        if package is None:
            continue
        _, statements, _, missing, _ = cov.analysis2(filename)
        tallies[package].statements += len(statements)
        tallies[package].missing += len(missing)
    return tallies


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-file", type=Path, default=REPO / ".coverage")
    args = parser.parse_args(argv)
    if not args.data_file.is_file():
        print(f"coverage: no data at {args.data_file} (run pytest with --cov first)", file=sys.stderr)
        return 2
    tallies = tally(args.data_file)
    below = []
    print(f"{'package':24s} {'statements':>10s} {'covered%':>9s} {'floor':>6s}")
    for name, floor in FLOORS.items():
        t = tallies[name]
        if t.statements == 0 and floor is None:
            continue
        mark = ""
        if floor is not None and t.percent < floor:
            below.append(name)
            mark = "  BELOW FLOOR"
        print(f"{name:24s} {t.statements:10d} {t.percent:8.1f}% {'-' if floor is None else f'{floor:.0f}%':>6s}{mark}")
    total = Tally(sum(t.statements for t in tallies.values()), sum(t.missing for t in tallies.values()))
    print(f"{'total':24s} {total.statements:10d} {total.percent:8.1f}%")
    if below:
        print(f"coverage below the floor in: {', '.join(below)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
