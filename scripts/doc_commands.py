"""The ``manage.py`` command lines that documentation pages show, as one would type them.

A page's indented lines are its commands: a line ending in a backslash goes on on the next one, a trailing
``# comment`` is dropped, and a command written on several pages (or twice on one) counts once.
``python scripts/doc_commands.py PAGE...`` prints them one a line (``scripts/readme_commands.sh`` runs the cheap
ones); ``tests/test_project.py`` checks that each names a real command with flags its parser accepts.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path


def manage_commands(pages: Iterable[Path]) -> list[str]:
    """The pages' indented command lines (continuations joined, comments dropped) that run manage.py, each once."""
    lines = [line for page in pages for line in [*page.read_text(encoding="utf-8").split("\n"), ""]]
    commands: list[str] = []
    current = ""
    for line in lines:
        if not line.startswith("    ") and not current:
            continue
        current += line.strip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        command = re.sub(r"\s+#.*$", "", current).strip()
        current = ""
        if "manage.py" in command and command not in commands:
            commands.append(command)
    return commands


if __name__ == "__main__":
    print("\n".join(manage_commands(Path(arg) for arg in sys.argv[1:])))
