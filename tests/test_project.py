"""The project's wiring: settings from the environment, deploy checks, compose file, README, CI."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

REPO = Path(__file__).resolve().parent.parent


ENTRY_ENV = {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE",
             "SECURE_SSL_REDIRECT", "SECURE_PROXY_SSL_HEADER", "SECURE_HSTS_SECONDS"}
PRODUCTION_KEY = "k" * 20 + "Zq9!x" * 10


def run_python(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The repository's Python in a subprocess, without the settings variables of this process, nor pytest-cov's
    (which would start coverage there and import the measured packages before this checkout is on sys.path)."""
    clean = {k: v for k, v in os.environ.items() if k not in ENTRY_ENV and not k.startswith("COV_CORE_")}
    clean.update(env)
    return subprocess.run([sys.executable, *args], cwd=REPO, env=clean, capture_output=True, text=True, timeout=120)


def run_django(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_python("manage.py", *args, **env)


SHOW_SETTINGS = "from django.conf import settings; print(settings.SETTINGS_MODULE, settings.DEBUG)"


def test_manage_py_defaults_to_the_development_settings(tmp_path: Path) -> None:
    result = run_django("shell", "-c", SHOW_SETTINGS, RANKRATE_VAR_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["config.settings.local", "True"]


def test_daphne_and_the_workers_default_to_the_development_settings(tmp_path: Path) -> None:
    for entry in ("config.asgi", "config.wsgi", "config.celery"):
        result = run_python("-c", f"import {entry}; {SHOW_SETTINGS}", RANKRATE_VAR_DIR=str(tmp_path))
        assert result.returncode == 0, (entry, result.stderr)
        assert result.stdout.split()[-2:] == ["config.settings.local", "True"], entry
    # A DJANGO_SETTINGS_MODULE of the environment wins over the default.
    result = run_python("-c", f"import config.celery; {SHOW_SETTINGS}", RANKRATE_VAR_DIR=str(tmp_path),
                        DJANGO_SETTINGS_MODULE="config.settings.test")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2] == "config.settings.test"


def load_production(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, object]:
    """Execute config.settings.production afresh with `env` (base stays as this process loaded it)."""
    for name in ("SECRET_KEY", "ALLOWED_HOSTS", "DEBUG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_module("config.settings.production")


def test_production_settings_have_no_default_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY must be set with the production settings"):
        load_production(monkeypatch, ALLOWED_HOSTS="rankrate.example.org")
    development_key = "django-insecure-rank-and-rate-development-only"
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY is the development key"):
        load_production(monkeypatch, SECRET_KEY=development_key, ALLOWED_HOSTS="rankrate.example.org")
    with pytest.raises(ImproperlyConfigured, match="ALLOWED_HOSTS must be set"):
        load_production(monkeypatch, SECRET_KEY=PRODUCTION_KEY)
    production = load_production(monkeypatch, SECRET_KEY=PRODUCTION_KEY, ALLOWED_HOSTS="a.org,b.org", DEBUG="1")
    assert production["DEBUG"] is False and production["ALLOWED_HOSTS"] == ["a.org", "b.org"]
    assert production["SECURE_SSL_REDIRECT"] is True and production["SESSION_COOKIE_SECURE"] is True
    assert production["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    behind_plain_proxy = load_production(monkeypatch, SECRET_KEY=PRODUCTION_KEY, ALLOWED_HOSTS="a.org",
                                         SECURE_SSL_REDIRECT="0", SECURE_PROXY_SSL_HEADER="0")
    assert behind_plain_proxy["SECURE_SSL_REDIRECT"] is False
    assert "SECURE_PROXY_SSL_HEADER" not in behind_plain_proxy


def test_debug_false_string_is_false_and_garbage_is_refused(tmp_path: Path) -> None:
    result = run_django("shell", "-c", "from django.conf import settings; print(settings.DEBUG)",
                        DEBUG="False", SECRET_KEY="x" * 60, RANKRATE_VAR_DIR=str(tmp_path))
    assert result.stdout.strip().splitlines()[-1] == "False", result.stderr
    result = run_django("check", DEBUG="maybe", SECRET_KEY="x" * 60, RANKRATE_VAR_DIR=str(tmp_path))
    assert "is not a boolean" in result.stderr


def test_learned_serving_precision_is_read_from_the_environment_and_checked(tmp_path: Path) -> None:
    show = "from django.conf import settings; print(settings.LEARNED_SERVING_PRECISION)"
    for env, expected in [({}, "fp32"), ({"LEARNED_SERVING_PRECISION": "BF16"}, "bf16"),
                          ({"LENS_SERVING_PRECISION": "bf16"}, "bf16"),  # the older name still works
                          ({"LENS_SERVING_PRECISION": "int8", "LEARNED_SERVING_PRECISION": "fp32"}, "fp32"),
                          ({"LENS_SERVING_INT8": "1"}, "int8"),
                          ({"LENS_SERVING_INT8": "1", "LEARNED_SERVING_PRECISION": "fp32"}, "fp32")]:
        values = {"LEARNED_SERVING_PRECISION": "", "LENS_SERVING_PRECISION": "", "LENS_SERVING_INT8": "", **env}
        result = run_django("shell", "-c", show, RANKRATE_VAR_DIR=str(tmp_path), **values)
        assert result.stdout.strip().splitlines()[-1] == expected, (env, result.stderr)
    result = run_django("check", LEARNED_SERVING_PRECISION="fp8", RANKRATE_VAR_DIR=str(tmp_path))
    assert "LEARNED_SERVING_PRECISION='fp8' is not one of fp32, bf16, int8" in result.stderr
    result = run_django("check", LEARNED_SERVING_PRECISION="int8", LEARNED_SERVING_DEVICE="cuda:0",
                        RANKRATE_VAR_DIR=str(tmp_path))
    assert "LEARNED_SERVING_PRECISION=int8 quantises for the CPU, but LEARNED_SERVING_DEVICE='cuda:0'" in result.stderr


def test_the_older_lens_names_of_the_learned_settings_are_fallbacks(tmp_path: Path) -> None:
    show = ("from django.conf import settings; "
            "print(settings.LEARNED_DEVICE, settings.LEARNED_SERVING_DEVICE, settings.LEARNED_CHECKPOINT_DIR)")
    cleared = {f"{prefix}_{name}": "" for prefix in ("LEARNED", "LENS")
               for name in ("DEVICE", "SERVING_DEVICE", "CHECKPOINT_DIR")}
    old = run_django("shell", "-c", show, RANKRATE_VAR_DIR=str(tmp_path), **{
        **cleared, "LENS_DEVICE": "cuda:1", "LENS_SERVING_DEVICE": "cpu", "LENS_CHECKPOINT_DIR": "/ckpt/old"})
    assert old.stdout.strip().splitlines()[-1] == "cuda:1 cpu /ckpt/old", old.stderr
    new = run_django("shell", "-c", show, RANKRATE_VAR_DIR=str(tmp_path), **{
        **cleared, "LENS_DEVICE": "cuda:1", "LEARNED_DEVICE": "cuda:0", "LEARNED_SERVING_DEVICE": "cuda:0",
        "LEARNED_CHECKPOINT_DIR": "/ckpt/new", "LENS_CHECKPOINT_DIR": "/ckpt/old"})
    assert new.stdout.strip().splitlines()[-1] == "cuda:0 cuda:0 /ckpt/new", new.stderr


def test_check_deploy_passes_with_production_settings(tmp_path: Path) -> None:
    result = run_django(
        "check", "--deploy", "--fail-level", "WARNING",
        DJANGO_SETTINGS_MODULE="config.settings.production", SECRET_KEY=PRODUCTION_KEY,
        ALLOWED_HOSTS="rankrate.example.org", RANKRATE_VAR_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr


def compose_environment(**given: str) -> dict[str, str]:
    """The app services' environment as docker compose resolves it, with `given` as the .env file."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())

    def substitute(match: re.Match[str]) -> str:
        variable, operator, default = match.group(1), match.group(2), match.group(3)
        if given.get(variable):
            return given[variable]
        assert operator != ":?", f"the stack requires {variable} in .env"
        return default

    pattern = r"\$\{(\w+)(:-|:\?)([^}]*)\}"
    return {name: re.sub(pattern, substitute, str(value)) for name, value in compose["x-app"]["environment"].items()}


def test_compose_runs_the_production_settings_and_passes_the_deploy_checks(tmp_path: Path) -> None:
    env = compose_environment(SECRET_KEY=PRODUCTION_KEY, ALLOWED_HOSTS="rankrate.example.org")
    assert env["DJANGO_SETTINGS_MODULE"] == "config.settings.production"
    assert env["ALLOWED_HOSTS"].split(",") == ["rankrate.example.org", "localhost"]
    with pytest.raises(AssertionError, match="requires SECRET_KEY"):
        compose_environment()
    env.update(RANKRATE_VAR_DIR=str(tmp_path), LEARNED_CHECKPOINT_DIR=str(tmp_path / "lens"))
    result = run_django("check", "--deploy", "--fail-level", "WARNING", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    # Behind PgBouncer's transaction pooling, neither server-side cursors nor prepared statements.
    database = "from django.conf import settings; d = settings.DATABASES['default']; "
    result = run_django("shell", "-c", database + "print(d['DISABLE_SERVER_SIDE_CURSORS'], d['SERVER_SIDE_PREPARED'])",
                        **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-2:] == ["True", "False"]
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "ENV DJANGO_SETTINGS_MODULE=config.settings.production" in dockerfile
    assert "ENV STATIC_ROOT=" in dockerfile


def test_docker_compose_is_valid_and_commands_exist() -> None:
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker", "gpu-worker"} <= set(services)
    for name in ("postgres", "redis", "web", "worker", "gpu-worker"):
        assert "healthcheck" in services[name], name
    gpu = services["gpu-worker"]
    assert gpu["command"][gpu["command"].index("-Q") + 1] == "gpu"
    assert gpu["command"][gpu["command"].index("--concurrency") + 1] == "1"
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    worker = services["worker"]
    assert worker["command"][worker["command"].index("-Q") + 1] == "default"
    for name in ("web", "worker", "gpu-worker"):
        command = " ".join(services[name]["command"])
        if "celery" in command:
            assert "-A config" in command and (REPO / "config" / "celery.py").is_file()
        if "daphne" in command:
            assert "config.asgi:application" in command and (REPO / "config" / "asgi.py").is_file()
        if "manage.py migrate" in command:
            assert (REPO / "manage.py").is_file()
    assert compose["volumes"].keys() >= {"pgdata", "redisdata", "appdata"}
    assert (REPO / "Dockerfile").is_file()


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"^\s*(make \w+)\s*$", readme, flags=re.M)
    assert "make run" in commands and "make test" in commands
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.strip().splitlines()[-1] == "make test"


@pytest.mark.django_db
def test_healthz(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_the_readme_shows_the_new_research_features_with_commands_their_parsers_accept() -> None:
    """The front door names the metric card, the allocation simulations and the planner page, and every
    manage.py line of it names a real command with flags that command's parser accepts."""
    import shlex

    from django.core.management import get_commands, load_command_class
    from django.urls import resolve

    doc_commands = runpy.run_path(str(REPO / "scripts" / "doc_commands.py"))  # the one reading readme_commands.sh runs
    commands = doc_commands["manage_commands"]([REPO / "README.md"])
    names = set()
    for command in commands:
        words = shlex.split(command)
        name = words[words.index(next(w for w in words if w.endswith("manage.py"))) + 1]
        names.add(name)
        parser = load_command_class(get_commands()[name], name).create_parser("manage.py", name)
        parser.parse_args(words[words.index(name) + 1:])  # a CommandError names an unknown flag
    assert {"meta_evaluate", "simulate_allocation", "campaign_report"} <= names
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "How settled is the ranking" in readme and "Allocation simulations" in readme
    assert resolve("/research/planner/").url_name == "research-planner" and "`/research/planner/`" in readme
