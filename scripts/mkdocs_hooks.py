"""MkDocs hooks (mkdocs.yml's ``hooks``): a page may include a Markdown file from outside ``docs/``.

A line ``<!-- include: PATH -->`` (PATH relative to the repository root) is replaced by that file's text
without its first heading, so ``experiments/README.md`` is shown on the site without being copied. A
missing file fails the build.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

INCLUDE = re.compile(r"^<!-- include: (?P<path>[\w./-]+) -->$", flags=re.M)


def included_text(path: Path) -> str:
    """The file's Markdown with its leading ``# `` heading dropped (the page has its own)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines).strip("\n") + "\n"


def on_page_markdown(markdown: str, *, page: Any, config: Any, files: Any) -> str:
    root = Path(config["config_file_path"]).resolve().parent

    def replace(match: re.Match[str]) -> str:
        path = root / match["path"]
        if not path.is_file():
            raise FileNotFoundError(f"{page.file.src_path}: included file {match['path']} does not exist")
        return included_text(path)

    return INCLUDE.sub(replace, markdown)
