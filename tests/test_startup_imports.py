"""Start-up stays light: Django set-up, the served entry points and every command module import no heavy library.

torch, transformers, spaCy, scipy, NLTK... cost seconds and hundreds of MB per process (commands, web and Celery
workers); they are imported inside the code paths that need them (issue 12). numpy (~0.1 s) is allowed where a
request or command uses the statistics cores (they import it at module level), but not by `django.setup()`
itself: models, admin modules and `AppConfig.ready` leave the statistics core and the analysis engine unloaded.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_project import PRODUCTION_KEY, run_python

REPO = Path(__file__).resolve().parent.parent

HEAVY = ("torch", "transformers", "spacy", "scipy", "sentence_transformers", "sacrebleu", "wn", "nltk",
         "textstat", "sklearn", "pandas")

PROBE = """
import importlib, json, os, sys
import django
django.setup()
for name in sys.argv[1:]:
    importlib.import_module(name)
heavy = {HEAVY!r}
print(json.dumps(sorted(m for m in {SETUP_LIGHT!r} if m in sys.modules)))
print(json.dumps(sorted(h for h in heavy if h in sys.modules)))
"""


def command_modules() -> list[str]:
    return sorted(
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for path in REPO.glob("*/management/commands/*.py")
        if path.name != "__init__.py"
    )


# Not loaded by `django.setup()` alone (each is loaded by the code paths that compute with it).
SETUP_LIGHT = ("numpy", "rapidfuzz", "annotation.analysis.engine", "evaluation.stats.report",
               "evaluation.services.report", "metrics.services.training")


def loaded_after(*modules: str, settings: str = "config.settings.production") -> tuple[list[str], list[str]]:
    """(the heavy libraries, the SETUP_LIGHT modules) in ``sys.modules`` after set-up and importing ``modules``."""
    probe = PROBE.replace("{HEAVY!r}", repr(HEAVY)).replace("{SETUP_LIGHT!r}", repr(SETUP_LIGHT))
    result = run_python(
        "-c", probe, *modules,
        DJANGO_SETTINGS_MODULE=settings, SECRET_KEY=PRODUCTION_KEY, ALLOWED_HOSTS="rankrate.example.org",
    )
    assert result.returncode == 0, result.stderr
    *_, light, heavy = result.stdout.strip().splitlines()
    return json.loads(heavy), json.loads(light)


def heavy_after(*modules: str, settings: str = "config.settings.production") -> list[str]:
    return loaded_after(*modules, settings=settings)[0]


def test_django_setup_imports_no_heavy_library() -> None:
    assert loaded_after() == ([], [])


def test_the_probe_sees_numpy_come_with_the_report() -> None:
    """The light check can fail: the report service does bring numpy and the statistics core in."""
    _, light = loaded_after("evaluation.services.report")
    assert {"numpy", "evaluation.stats.report", "evaluation.services.report"} <= set(light)


def test_the_served_entry_points_import_no_heavy_library() -> None:
    assert heavy_after("config.asgi", "config.urls", "config.celery") == []


def test_task_and_consumer_modules_import_no_heavy_library() -> None:
    modules = sorted(
        ".".join(path.relative_to(REPO).with_suffix("").parts)
        for pattern in ("*/tasks.py", "*/consumers.py", "*/admin.py")
        for path in REPO.glob(pattern)
    )
    assert "metrics.admin" in modules
    assert heavy_after(*modules) == []


@pytest.mark.parametrize("module", command_modules())
def test_every_management_command_module_imports_no_heavy_library(module: str) -> None:
    assert heavy_after(module) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check itself can fail: importing the LENS trainer does bring torch in."""
    assert "torch" in heavy_after("metrics.lens.training", settings="config.settings.local")


def test_runserver_alone_installs_daphne_app() -> None:
    result = run_python("manage.py", "runserver", "--help")
    assert result.returncode == 0, result.stderr
    assert "--websocket_handshake_timeout" in result.stdout  # daphne's runserver, websockets included


@pytest.mark.parametrize("module", command_modules())
def test_every_management_command_skips_the_system_checks(module: str) -> None:
    """The checks import the whole URLconf (~0.5 s); `manage.py check`, migrate and the tests run them."""
    import importlib

    from core.commands import ProjectCommand

    loaded = importlib.import_module(module)
    if not hasattr(loaded, "Command"):  # a helper module beside the commands (_common)
        assert module.rpartition(".")[2].startswith("_")
        return
    command = loaded.Command
    assert issubclass(command, ProjectCommand) and command.requires_system_checks == []
