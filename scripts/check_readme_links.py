"""Check that every relative link of README.md and experiments/README.md names a file of the repository.

MkDocs validates the links between the pages under docs/; these two files live outside it, so their links
(``[text](docs/operations.md)``, ``[text](docs/operations.md#anchor)``) are checked here: the file part
must exist. Exits 1 naming each broken link.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "experiments/README.md")
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def broken_links(page: Path) -> list[str]:
    """The page's relative links whose file does not exist, as 'page:line: target'."""
    problems = []
    for number, line in enumerate(page.read_text(encoding="utf-8").split("\n"), start=1):
        for match in LINK.finditer(line):
            target = match["target"]
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # an absolute URL, or an anchor in the page itself
            path = target.split("#", 1)[0]
            if not (page.parent / path).exists():
                problems.append(f"{page.relative_to(ROOT)}:{number}: {target}")
    return problems


def main() -> int:
    problems = [problem for name in PAGES for problem in broken_links(ROOT / name)]
    for problem in problems:
        print(f"broken link {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
