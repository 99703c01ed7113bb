"""The project's wiring: settings from the environment, deploy checks, compose file, README, CI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent


def run_django(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items()
        if k not in {"DEBUG", "SECRET_KEY", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    clean.update(env)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=clean, capture_output=True,
                          text=True, timeout=120)


def test_secret_key_required_when_debug_off(tmp_path):
    result = run_django("check", RANKRATE_VAR_DIR=str(tmp_path))
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_debug_false_string_is_false_and_garbage_is_refused(tmp_path):
    result = run_django("shell", "-c", "from django.conf import settings; print(settings.DEBUG)",
                        DEBUG="False", SECRET_KEY="x" * 60, RANKRATE_VAR_DIR=str(tmp_path))
    assert result.stdout.strip().splitlines()[-1] == "False", result.stderr
    result = run_django("check", DEBUG="maybe", SECRET_KEY="x" * 60, RANKRATE_VAR_DIR=str(tmp_path))
    assert "is not a boolean" in result.stderr


def test_check_deploy_passes_with_production_settings(tmp_path):
    result = run_django(
        "check", "--deploy", "--fail-level", "WARNING",
        DJANGO_SETTINGS_MODULE="config.settings.production", SECRET_KEY="k" * 20 + "Zq9!x" * 10,
        ALLOWED_HOSTS="rankrate.example.org", RANKRATE_VAR_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_docker_compose_is_valid_and_commands_exist():
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


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    commands = re.findall(r"^\s*(make \w+)\s*$", readme, flags=re.M)
    assert "make run" in commands and "make test" in commands
    ci = (REPO / ".ci" / "run").read_text()
    assert ci.strip().splitlines()[-1] == "make test"


@pytest.mark.django_db
def test_healthz(client):
    response = client.get("/healthz")
    assert response.status_code == 200 and response.json()["status"] == "ok"
