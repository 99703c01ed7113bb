"""The metrics app's layers import one way: tasks and interfaces -> services -> selectors -> models."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports, at module level or inside functions (type-only imports left out)."""
    names: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            children: list[ast.AST] = list(node.orelse)
        else:
            children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        for child in children:
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return names


def test_services_and_selectors_import_no_tasks_and_selectors_import_no_services() -> None:
    services = sorted((REPO / "metrics" / "services").glob("*.py"))
    selectors = REPO / "metrics" / "selectors.py"
    for path in [*services, selectors]:
        tasks = sorted(name for name in _imported(path) if name.startswith("metrics.tasks"))
        assert not tasks, f"{path.relative_to(REPO)} imports {tasks}; queue the task by name (core.dispatch)"
    reads = sorted(name for name in _imported(selectors) if name.startswith("metrics.services"))
    assert not reads, f"metrics/selectors.py imports {reads}"
