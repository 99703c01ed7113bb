"""The apps' import graph follows the layer order, has no cycle, and the pure cores stay free of Django.

Layer order (an arrow means "may be imported by"): core <- annotation <- evaluation <- metrics <- frontend.
Every ``import`` counts: module level, inside functions, and under ``if TYPE_CHECKING:``. The pure cores
(listed in ``PURE_CORES``) import neither the web stack nor any app, except other pure cores below them.
Between modules, no two import each other, directly or through others (an import inside a function counts;
one under ``if TYPE_CHECKING:`` does not, as it never runs).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS: tuple[str, ...] = ("core", "annotation", "evaluation", "metrics", "frontend")
PURE_CORES: tuple[str, ...] = (
    "annotation.analysis", "annotation.formats", "annotation.rules", "evaluation.stats", "evaluation.allocation",
    "metrics.lens",
    "metrics.suite", "metrics.perturb", "metrics.learned", "metrics.referee", "metrics.siera", "metrics.blend",
    "core.csvsafe",
)
WEB_STACK: tuple[str, ...] = (
    "django", "rest_framework", "channels", "channels_redis", "celery", "daphne", "drf_spectacular", "asgiref",
    "config",
)
# Research and measuring scripts: they may import the product, never the reverse.
OUTSIDE_PRODUCT: tuple[str, ...] = ("experiments", "benchmarks")


@dataclass(frozen=True)
class ImportSite:
    path: Path
    line: int
    importer: str  # dotted module doing the import
    imported: str  # dotted module imported (absolute)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    package = importer.split(".") if is_package else importer.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(path: Path, root: Path) -> Iterator[ImportSite]:
    """Every import in the file, wherever it is (functions and ``TYPE_CHECKING`` blocks included)."""
    importer = module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield ImportSite(path, node.lineno, importer, alias.name)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, importer, path.name == "__init__.py")
            # `from annotation import models` imports annotation.models: count the submodules as well.
            for alias in node.names:
                yield ImportSite(path, node.lineno, importer, f"{target}.{alias.name}" if target else alias.name)


def python_files(root: Path, packages: Sequence[str]) -> Iterator[Path]:
    for package in packages:
        module = (root / package).with_suffix(".py")
        yield from [module] if module.is_file() else sorted((root / package).rglob("*.py"))


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_violations(root: Path, layers: Sequence[str]) -> list[str]:
    """Imports of an app from a lower layer (or a sibling it does not sit above), as 'file:line: ...'."""
    rank = {app: i for i, app in enumerate(layers)}
    problems = []
    for path in python_files(root, layers):
        for site in imports_of(path, root):
            source, target = site.importer.split(".")[0], site.imported.split(".")[0]
            if target in rank and rank[target] > rank[source]:
                problems.append(
                    f"{path.relative_to(root)}:{site.line}: {source} imports {site.imported} "
                    f"(layer order {' <- '.join(layers)})"
                )
    return problems


def app_graph(root: Path, apps: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """app -> imported app -> the 'file:line' sites of those imports."""
    graph: dict[str, dict[str, list[str]]] = {app: {} for app in apps}
    for path in python_files(root, apps):
        for site in imports_of(path, root):
            source, target = site.importer.split(".")[0], site.imported.split(".")[0]
            if target in graph and target != source:
                graph[source].setdefault(target, []).append(f"{path.relative_to(root)}:{site.line}")
    return graph


def cycles(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """Every elementary cycle found by depth-first search, each as [a, b, ..., a]."""
    found: list[list[str]] = []
    seen: set[tuple[str, ...]] = set()

    def visit(node: str, path: list[str]) -> None:
        for nxt in graph[node]:
            if nxt == path[0]:
                cycle = [*path, nxt]
                key = tuple(sorted(path))
                if key not in seen:
                    seen.add(key)
                    found.append(cycle)
            elif nxt not in path and nxt > path[0]:
                visit(nxt, [*path, nxt])

    for start in sorted(graph):
        visit(start, [start])
    return found


def describe_cycle(graph: dict[str, dict[str, list[str]]], cycle: list[str]) -> str:
    steps = [f"{a} -> {b} ({', '.join(dict.fromkeys(graph[a][b][:3]))})" for a, b in itertools.pairwise(cycle)]
    return "; ".join(steps)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports_of(path: Path, root: Path) -> Iterator[ImportSite]:
    """The imports that can run: as :func:`imports_of`, less those under ``if TYPE_CHECKING:``."""
    importer = module_name(path, root)
    is_package = path.name == "__init__.py"
    pending: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"), filename=str(path))]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield ImportSite(path, node.lineno, importer, alias.name)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, importer, is_package)
            yield ImportSite(path, node.lineno, importer, target)
            for alias in node.names:
                yield ImportSite(path, node.lineno, importer, f"{target}.{alias.name}" if target else alias.name)
        pending.extend(ast.iter_child_nodes(node))


def _ancestors(module: str) -> list[str]:
    """``a.b.c`` -> ``["a", "a.b", "a.b.c"]``: importing a module runs its packages first."""
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def module_graph(root: Path, packages: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """module -> project module it imports at run time -> the 'file:line' sites of those imports.

    A name imported from a module (``from a.b import c``) is the module ``a.b.c`` when there is one, else
    ``a.b``, which counts even when it is the importer's own package; the packages above the imported module
    count too, except those that contain the importer (they are already being imported when it runs).
    """
    files = {module_name(path, root): path for path in python_files(root, packages)}
    graph: dict[str, dict[str, list[str]]] = {module: {} for module in files}
    for module, path in files.items():
        own_packages = set(_ancestors(module))
        for site in runtime_imports_of(path, root):
            known = [name for name in _ancestors(site.imported) if name in files]
            targets = {*known[-1:], *(name for name in known[:-1] if name not in own_packages)} - {module}
            for target in sorted(targets):
                graph[module].setdefault(target, []).append(f"{path.relative_to(root)}:{site.line}")
    return graph


def strongly_connected(graph: dict[str, dict[str, list[str]]]) -> list[list[str]]:
    """The import cycles: each set of modules that all reach one another (Tarjan), sorted, largest first."""
    index: dict[str, int] = {}
    lowlink: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = lowlink[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                lowlink[node] = min(lowlink[node], lowlink[nxt])
            elif nxt in on_stack:
                lowlink[node] = min(lowlink[node], index[nxt])
        if lowlink[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components, key=lambda c: (-len(c), c))


def describe_component(graph: dict[str, dict[str, list[str]]], component: list[str]) -> str:
    """The imports that tie a cycle's modules together, one per line, with where they are."""
    members = set(component)
    return "\n".join(
        f"  {a} -> {b} ({', '.join(dict.fromkeys(graph[a][b][:3]))})"
        for a in component for b in sorted(graph[a]) if b in members
    )


def pure_core_violations(root: Path, cores: Sequence[str], layers: Sequence[str]) -> list[str]:
    """Imports of the web stack or of an app (other than a pure core in the same or a lower layer)."""
    rank = {app: i for i, app in enumerate(layers)}
    problems = []
    for core in cores:
        for path in python_files(root, [core.replace(".", "/")]):
            for site in imports_of(path, root):
                top = site.imported.split(".")[0]
                allowed_core = any(_within(site.imported, other) for other in cores) and rank.get(
                    top, len(layers)
                ) <= rank[core.split(".")[0]]
                if top in WEB_STACK or (top in rank and not allowed_core):
                    problems.append(f"{path.relative_to(root)}:{site.line}: pure core {core} imports {site.imported}")
    return problems


def outside_imports(root: Path, packages: Sequence[str], outside: Sequence[str]) -> list[str]:
    """Imports of a package outside the product (``outside``) by a product package, as 'file:line: ...'."""
    problems = []
    for path in python_files(root, packages):
        for site in imports_of(path, root):
            top = site.imported.split(".")[0]
            if top in outside:
                problems.append(f"{path.relative_to(root)}:{site.line}: {site.importer} imports {site.imported} "
                                "(outside the product)")
    return problems


# --- The project -------------------------------------------------------------------------------------------


def test_every_app_is_checked() -> None:
    apps = {p.parent.name for p in ROOT.glob("*/apps.py")}
    assert apps == set(LAYERS), f"apps {sorted(apps)} vs layers {LAYERS}: put each app in its layer"


def test_apps_import_only_lower_layers() -> None:
    problems = layer_violations(ROOT, LAYERS)
    assert not problems, "imports against the layer order:\n" + "\n".join(problems)


def test_app_import_graph_has_no_cycle() -> None:
    graph = app_graph(ROOT, LAYERS)
    found = cycles(graph)
    assert not found, "import cycles between apps:\n" + "\n".join(describe_cycle(graph, c) for c in found)


PROJECT_PACKAGES: tuple[str, ...] = (*LAYERS, "config")

def test_module_import_graph_has_no_cycle() -> None:
    graph = module_graph(ROOT, PROJECT_PACKAGES)
    found = strongly_connected(graph)
    assert not found, "import cycles between modules (imports inside functions count):\n" + "\n".join(
        f"{' <-> '.join(c)}:\n{describe_component(graph, c)}" for c in found
    )


def test_app_graph_is_the_documented_one() -> None:
    """The app-level edges of today; a new one is a deliberate change of this table (and of the README)."""
    graph = app_graph(ROOT, LAYERS)
    assert {app: sorted(targets) for app, targets in graph.items()} == {
        "core": [],
        "annotation": ["core"],
        "evaluation": ["annotation", "core"],
        "metrics": ["annotation", "core", "evaluation"],
        "frontend": ["annotation", "core", "evaluation", "metrics"],
    }


def test_pure_cores_import_no_django_and_no_app() -> None:
    problems = pure_core_violations(ROOT, PURE_CORES, LAYERS)
    assert not problems, "pure cores must stay free of the web stack and the apps:\n" + "\n".join(problems)


def test_no_product_package_imports_experiments_or_benchmarks() -> None:
    product = [*LAYERS, "config"]
    problems = outside_imports(ROOT, product, OUTSIDE_PRODUCT)
    assert not problems, "the product must not import research or benchmark scripts:\n" + "\n".join(problems)


# --- The checker itself, on a made-up project --------------------------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    _write(tmp_path, {
        "low/__init__.py": "",
        "low/models.py": "import os\n",
        "low/pure/__init__.py": "from . import maths\n",
        "low/pure/maths.py": "import math\n",
        "high/__init__.py": "",
        "high/views.py": "from low.models import os\nfrom . import helpers\n",
        "high/helpers.py": "",
    })
    return tmp_path


def test_checker_accepts_a_clean_project(toy: Path) -> None:
    assert layer_violations(toy, ["low", "high"]) == []
    assert cycles(app_graph(toy, ["low", "high"])) == []
    assert pure_core_violations(toy, ["low.pure"], ["low", "high"]) == []


@pytest.mark.parametrize(
    "source",
    [
        "from high import views\n",
        "import high.views as v\n",
        "def f():\n    from high.views import x\n    return x\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from high.helpers import y\n",
        "class A:\n    def m(self):\n        import high\n",
    ],
    ids=["module", "import-as", "in-function", "type-checking", "in-method"],
)
def test_checker_names_an_upward_import_and_its_cycle(toy: Path, source: str) -> None:
    _write(toy, {"low/services.py": source})
    problems = layer_violations(toy, ["low", "high"])
    line = source.count("\n", 0, source.index("high")) + 1
    assert len(problems) == 1 and problems[0].startswith(f"low/services.py:{line}: low imports high"), problems
    assert problems[0].endswith("(layer order low <- high)")
    graph = app_graph(toy, ["low", "high"])
    assert cycles(graph) == [["high", "low", "high"]]
    assert f"low/services.py:{line}" in describe_cycle(graph, cycles(graph)[0])


def test_checker_resolves_relative_imports(toy: Path) -> None:
    _write(toy, {"low/pure/bad.py": "from ...high import views\n", "low/pure/web.py": "from django.db import models\n"})
    assert layer_violations(toy, ["low", "high"]) == ["low/pure/bad.py:1: low imports high.views "
                                                      "(layer order low <- high)"]
    assert sorted(pure_core_violations(toy, ["low.pure"], ["low", "high"])) == [
        "low/pure/bad.py:1: pure core low.pure imports high.views",
        "low/pure/web.py:1: pure core low.pure imports django.db.models",
    ]


def test_checker_lets_a_pure_core_use_its_own_and_lower_pure_cores_only(toy: Path) -> None:
    _write(toy, {
        "high/pure/__init__.py": "from low.pure.maths import math\n",
        "high/pure/app.py": "from low.models import os\n",
    })
    assert pure_core_violations(toy, ["low.pure", "high.pure"], ["low", "high"]) == [
        "high/pure/app.py:1: pure core high.pure imports low.models.os",
    ]


def test_checker_names_a_product_import_of_an_outside_package(toy: Path) -> None:
    _write(toy, {"low/helpers.py": "def f():\n    from experiments.datasets import x\n    return x\n",
                 "experiments/__init__.py": "", "experiments/study.py": "from low.models import os\n"})
    assert outside_imports(toy, ["low", "high"], ["experiments"]) == [
        "low/helpers.py:2: low.helpers imports experiments.datasets.x (outside the product)",
    ]


def test_cycle_finder_names_a_cycle_through_a_function_level_import(toy: Path) -> None:
    _write(toy, {
        "high/helpers.py": "def later():\n    from .views import thing\n    return thing\n",
        "high/views.py": "from high.helpers import later\nthing = 1\n",
        "high/solo.py": "from low.pure import maths\n",
    })
    graph = module_graph(toy, ["low", "high"])
    assert strongly_connected(graph) == [["high.helpers", "high.views"]]
    described = describe_component(graph, ["high.helpers", "high.views"])
    assert "high.helpers -> high.views (high/helpers.py:2)" in described
    assert "high.views -> high.helpers (high/views.py:1)" in described


def test_cycle_finder_ignores_type_checking_imports_and_the_importers_own_packages(toy: Path) -> None:
    _write(toy, {
        "high/helpers.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from high.views import x\n",
        "high/views.py": "from high.helpers import y\n",
        # A package importing its module, which imports a sibling: the package is not imported back.
        "low/pure/__init__.py": "from low.pure.maths import pi\n",
        "low/pure/maths.py": "from low.pure.consts import pi\n",
        "low/pure/consts.py": "pi = 3\n",
    })
    graph = module_graph(toy, ["low", "high"])
    assert graph["high.helpers"] == {}
    assert "low.pure" not in graph["low.pure.maths"]
    assert strongly_connected(graph) == []


def test_cycle_finder_counts_the_package_a_module_imports_from(toy: Path) -> None:
    _write(toy, {"low/__init__.py": "from high.helpers import z\n", "high/helpers.py": "from low import models\n"})
    graph = module_graph(toy, ["low", "high"])
    assert strongly_connected(graph) == [["high.helpers", "low"]]


def test_cycle_finder_sees_a_module_import_a_name_back_from_its_own_package(toy: Path) -> None:
    _write(toy, {
        "low/pure/__init__.py": "VERSION = 1\n\ndef clear():\n    from low.pure import maths\n",
        "low/pure/maths.py": "def sign():\n    from low.pure import VERSION\n    return VERSION\n",
    })
    assert strongly_connected(module_graph(toy, ["low", "high"])) == [["low.pure", "low.pure.maths"]]
