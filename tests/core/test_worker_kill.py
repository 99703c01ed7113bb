"""Fault test: kill -9 a real Celery worker in the middle of a long analysis job, then restart it.

The embedded setup (a SQLite file and the file-system broker, which drops a message once handed out, so
only the reaper can bring the job back) with a worker whose engine is a slow stand-in. Before the fix the
job stayed "running" for ever after the restart, with nothing in the queue.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

SOURCES = 375  # 1,500 output texts: the task analyses them in chunks of 480


def fault_env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings.local", "DEBUG": "0",
        "RANKRATE_VAR_DIR": str(folder), "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "CELERY_TASK_ALWAYS_EAGER": "0", "JOB_HEARTBEAT_SECONDS": "1", "JOB_STALE_SECONDS": "60",
        "JOB_REAP_INTERVAL_SECONDS": "1", "FAULT_SECONDS_PER_CHUNK": "1.5",
    })
    return env


def step(env: dict[str, str], *args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "tests.core.fault_setup", *args], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=180, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated database with the campaign imported, copied by each test (migrating takes a while)."""
    folder = tmp_path_factory.mktemp("fault-template")
    step(fault_env(folder), "prepare", str(SOURCES))
    return folder / "db.sqlite3"


@pytest.fixture
def embedded(tmp_path: Path, template: Path) -> Iterator[dict[str, Any]]:
    with sqlite3.connect(template) as source, sqlite3.connect(tmp_path / "db.sqlite3") as copy:
        source.backup(copy)
    env = fault_env(tmp_path)
    workers: list[subprocess.Popen[bytes]] = []

    def start_worker() -> subprocess.Popen[bytes]:
        log = (tmp_path / f"worker{len(workers)}.log").open("wb")
        proc = subprocess.Popen([sys.executable, "-m", "tests.core.fault_worker", "fault@test"], cwd=REPO, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        workers.append(proc)
        return proc

    yield {"env": env, "db": tmp_path / "db.sqlite3", "start_worker": start_worker, "dir": tmp_path}
    for proc in workers:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def query(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db, timeout=30) as conn:
        return conn.execute(sql, params).fetchall()


def wait_for(condition: Callable[[], bool], what: str, timeout: float, logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    tails = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(logs.glob("*.log")))
    pytest.fail(f"timed out waiting for {what}\n{tails}")


def test_a_killed_workers_analysis_is_finished_after_the_restart_with_nothing_disguised(embedded):
    db, env, logs = embedded["db"], embedded["env"], embedded["dir"]
    job_id = int(step(env, "queue").split()[-1])

    def job() -> tuple[Any, ...]:
        return query(db, "SELECT status, done, total, attempts, error FROM core_backgroundjob WHERE id = ?", job_id)[0]

    total = query(db, "SELECT count(*) FROM annotation_ratingunit")[0][0]
    assert total == SOURCES * 4
    worker = embedded["start_worker"]()
    wait_for(lambda: job()[0] == "running" and 0 < job()[1] < total, "the first chunk", 120, logs)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()

    status, done, _, attempts, _ = job()
    assert (status, attempts) == ("running", 1)  # what the kill leaves behind
    analysed, pending = query(
        db, "SELECT sum(analysis_version != ''), sum(analysis_version = '') FROM annotation_ratingunit"
    )[0]
    assert analysed == done and pending == total - done > 0  # nothing is half-written
    # The units the worker did not reach are stored as not analysed: no category for the page to show.
    assert query(db, "SELECT count(*) FROM annotation_ratingunit WHERE analysis_version = '' AND auto_category != ''"
                 ) == [(0,)]

    embedded["start_worker"]()  # the same worker name: its reaper knows the job was its own
    wait_for(lambda: job()[0] in ("done", "failed"), "the job to end", 120, logs)
    status, done, _, attempts, error = job()
    assert (status, attempts) == ("done", 2), error
    assert done == pending  # the second run did only what was missing
    assert query(db, "SELECT count(*) FROM annotation_ratingunit WHERE analysis_version = ''") == [(0,)]
    assert query(db, "SELECT count(*) FROM annotation_ratingunit WHERE auto_category = 'deletion'") == [(total,)]


def test_a_job_out_of_attempts_is_marked_failed_and_retry_finishes_it(embedded):
    db, env, logs = embedded["db"], embedded["env"], embedded["dir"]
    env["JOB_MAX_ATTEMPTS"] = "1"
    job_id = int(step(env, "queue").split()[-1])

    def job() -> tuple[Any, ...]:
        return query(db, "SELECT status, done, attempts, error FROM core_backgroundjob WHERE id = ?", job_id)[0]

    worker = embedded["start_worker"]()
    wait_for(lambda: job()[0] == "running" and job()[1] > 0, "the first chunk", 120, logs)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    embedded["start_worker"]()
    wait_for(lambda: job()[0] == "failed", "the job to be marked failed", 60, logs)
    assert "Interrupted" in job()[3] and "Retry" in job()[3]
    assert query(db, "SELECT count(*) FROM annotation_ratingunit WHERE analysis_version = '' AND auto_category != ''"
                 ) == [(0,)]
    step(env, "retry", str(job_id))
    wait_for(lambda: job()[0] == "done", "the retried job to finish", 120, logs)
    assert query(db, "SELECT count(*) FROM annotation_ratingunit WHERE analysis_version = ''") == [(0,)]
