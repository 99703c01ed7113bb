"""Fault tests: kill -9 a real Celery worker in the middle of a long analysis job or of a LENS training, then
restart it; the work ends done (on a second start) or failed with a message saying how to run it again, never
"running" for ever, and nothing half-done is shown as done.

Each test runs a worker (``tests.core.fault_worker``: slow stand-ins, so the kill lands mid-work) on its own
SQLite file, with one of two brokers:
- ``file``: the embedded default; the file-system broker drops a message once handed out, so only the
  reaper (run when the worker starts again) can bring the work back;
- ``redis``: late acknowledgement with a short visibility timeout, so the broker delivers the killed
  worker's message again, while the reaper queues the work too; the claim lets only one of them run it.
Before the fix the job stayed "running" for ever after the restart, with nothing in the queue.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

SOURCES = 375  # 1,500 output texts: the task analyses them in chunks of 480
EPOCHS = 3  # of the tiny encoder on 12 rated sources: about 8 steps an epoch
# The rating units of the analysed campaign (the LENS campaign has its own).
UNITS = ("annotation_ratingunit WHERE source_id IN (SELECT s.id FROM annotation_source s "
         "JOIN annotation_campaign c ON c.id = s.campaign_id WHERE c.slug = 'fault')")


def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    if not url:
        return ""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2).ping()
    except redis.RedisError:
        return ""
    return url


def fault_env(folder: Path, broker: str = "file") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "config.settings.local", "DEBUG": "0",
        "RANKRATE_VAR_DIR": str(folder), "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "LEARNED_CHECKPOINT_DIR": str(folder / "lens"), "LEARNED_DEVICE": "cpu", "OMP_NUM_THREADS": "1",
        "CELERY_TASK_ALWAYS_EAGER": "0", "JOB_HEARTBEAT_SECONDS": "1", "JOB_STALE_SECONDS": "60",
        "JOB_REAP_INTERVAL_SECONDS": "1", "FAULT_SECONDS_PER_CHUNK": "1.5", "FAULT_SECONDS_PER_STEP": "0.4",
    })
    if broker == "redis":
        (folder / "results").mkdir(exist_ok=True)
        env.update({
            "REDIS_URL": redis_url(), "CELERY_RESULT_BACKEND": f"file://{folder / 'results'}",
            "CELERY_VISIBILITY_TIMEOUT": "3", "FAULT_BROKER_PREFIX": f"fault-{uuid.uuid4().hex}:",
        })
    return env


def step(env: dict[str, str], *args: str) -> str:
    run = subprocess.run([sys.executable, "-m", "tests.core.fault_setup", *args], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated database with both campaigns, and the tiny encoder, shared by the tests (copied by each)."""
    folder = tmp_path_factory.mktemp("fault-template")
    step(fault_env(folder), "prepare", str(SOURCES))
    return folder


@pytest.fixture(params=["file", "redis"])
def broker(request: pytest.FixtureRequest) -> str:
    if request.param == "redis" and not redis_url():
        pytest.skip("no Redis answers at REDIS_URL")
    return str(request.param)


@pytest.fixture
def embedded(tmp_path: Path, template: Path, broker: str) -> Iterator[dict[str, Any]]:
    with sqlite3.connect(template / "db.sqlite3") as source, sqlite3.connect(tmp_path / "db.sqlite3") as copy:
        source.backup(copy)
    env = fault_env(tmp_path, broker)
    workers: list[subprocess.Popen[bytes]] = []

    def start_worker() -> subprocess.Popen[bytes]:
        log = (tmp_path / f"worker{len(workers)}.log").open("wb")
        proc = subprocess.Popen([sys.executable, "-m", "tests.core.fault_worker", "fault@test"], cwd=REPO, env=env,
                                stdout=log, stderr=subprocess.STDOUT)
        workers.append(proc)
        return proc

    yield {"env": env, "db": tmp_path / "db.sqlite3", "start_worker": start_worker, "dir": tmp_path,
           "encoder": template / "tiny-bert"}
    for proc in workers:  # idle by now; a warm shutdown would only cost time
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if broker == "redis":  # the messages and bookkeeping this test's broker wrote
        import redis

        client = redis.Redis.from_url(env["REDIS_URL"])
        keys = list(client.scan_iter(match=f"{env['FAULT_BROKER_PREFIX']}*"))
        if keys:
            client.delete(*keys)


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


def kill(worker: subprocess.Popen[bytes], env: dict[str, str]) -> None:
    """kill -9 the worker; the next one works at full speed (the stand-ins only slow down the killed run)."""
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    env.update({"FAULT_SECONDS_PER_CHUNK": "0.1", "FAULT_SECONDS_PER_STEP": "0"})


# --- A long analysis job ---------------------------------------------------------------------------------


def test_a_killed_workers_analysis_is_finished_after_the_restart_with_nothing_disguised(embedded, broker):
    db, env, logs = embedded["db"], embedded["env"], embedded["dir"]
    job_id = int(step(env, "queue", "analysis").split()[-1])

    def job() -> tuple[Any, ...]:
        return query(db, "SELECT status, done, total, attempts, error FROM core_backgroundjob WHERE id = ?", job_id)[0]

    total = query(db, f"SELECT count(*) FROM {UNITS}")[0][0]
    assert total == SOURCES * 4
    worker = embedded["start_worker"]()
    wait_for(lambda: job()[0] == "running" and 0 < job()[1] < total, "the first chunk", 120, logs)
    kill(worker, env)

    status, done, _, attempts, _ = job()
    assert (status, attempts) == ("running", 1)  # what the kill leaves behind
    analysed, pending = query(db, f"SELECT sum(analysis_version != ''), sum(analysis_version = '') FROM {UNITS}")[0]
    assert analysed == done and pending == total - done > 0  # nothing is half-written
    # The units the worker did not reach are stored as not analysed: no category for the page to show.
    assert query(db, f"SELECT count(*) FROM {UNITS} AND analysis_version = '' AND auto_category != ''") == [(0,)]

    embedded["start_worker"]()  # the same worker name: its reaper knows the job was its own
    wait_for(lambda: job()[0] in ("done", "failed"), "the job to end", 120, logs)
    status, done, _, attempts, error = job()
    # Two starts, not three: with Redis the broker's second delivery and the reaper's requeue ran it once.
    assert (status, attempts) == ("done", 2), error
    assert done == pending  # the second run did only what was missing
    assert query(db, f"SELECT count(*) FROM {UNITS} AND analysis_version = ''") == [(0,)]
    assert query(db, f"SELECT count(*) FROM {UNITS} AND auto_category = 'deletion'") == [(total,)]


@pytest.mark.parametrize("broker", ["file"], indirect=True)
def test_a_job_out_of_attempts_is_marked_failed_and_retry_finishes_it(embedded):
    db, env, logs = embedded["db"], embedded["env"], embedded["dir"]
    env["JOB_MAX_ATTEMPTS"] = "1"
    job_id = int(step(env, "queue", "analysis").split()[-1])

    def job() -> tuple[Any, ...]:
        return query(db, "SELECT status, done, attempts, error FROM core_backgroundjob WHERE id = ?", job_id)[0]

    worker = embedded["start_worker"]()
    wait_for(lambda: job()[0] == "running" and job()[1] > 0, "the first chunk", 120, logs)
    kill(worker, env)
    embedded["start_worker"]()
    wait_for(lambda: job()[0] == "failed", "the job to be marked failed", 60, logs)
    assert "Interrupted" in job()[3] and "Retry" in job()[3]
    assert query(db, f"SELECT count(*) FROM {UNITS} AND analysis_version = '' AND auto_category != ''") == [(0,)]
    step(env, "retry", str(job_id))
    wait_for(lambda: job()[0] == "done", "the retried job to finish", 120, logs)
    assert query(db, f"SELECT count(*) FROM {UNITS} AND analysis_version = ''") == [(0,)]


# --- A LENS training --------------------------------------------------------------------------------------


def lens_state(db: Path, version_id: int) -> dict[str, Any]:
    row = query(db, "SELECT status, attempts, error, checkpoint_path, is_active FROM metrics_lensmodelversion "
                    "WHERE id = ?", version_id)[0]
    events = query(db, "SELECT kind, epoch FROM metrics_lenstrainingevent WHERE version_id = ? ORDER BY id",
                   version_id)
    return {"status": row[0], "attempts": row[1], "error": row[2], "checkpoint": row[3], "active": bool(row[4]),
            "steps": sum(kind == "step" for kind, _ in events),
            "epochs": [epoch for kind, epoch in events if kind == "epoch"]}


def test_a_training_killed_mid_epoch_is_trained_again_from_the_start_and_not_activated(embedded, broker):
    db, env, logs = embedded["db"], embedded["env"], embedded["dir"]
    version_id = int(step(env, "queue", "lens", str(embedded["encoder"]), str(EPOCHS)).split()[-1])
    assert lens_state(db, version_id)["status"] == "queued"

    worker = embedded["start_worker"]()
    wait_for(lambda: lens_state(db, version_id)["steps"] >= 3, "three training steps", 180, logs)
    kill(worker, env)
    partial_state = lens_state(db, version_id)
    assert partial_state["status"] == "running" and partial_state["attempts"] == 1  # what the kill leaves behind
    assert partial_state["checkpoint"] == "" and not partial_state["active"]
    assert len(partial_state["epochs"]) < EPOCHS

    embedded["start_worker"]()
    wait_for(lambda: lens_state(db, version_id)["status"] not in ("queued", "running"), "the training to end",
             180, logs)
    state = lens_state(db, version_id)
    assert (state["status"], state["attempts"]) == ("succeeded", 2), state["error"]
    # The checkpoint comes from one whole second run: its curve starts again at epoch 1 and has every epoch
    # once (the killed run's events were cleared); a finished training is never activated by itself.
    assert state["epochs"] == list(range(1, EPOCHS + 1))
    assert Path(state["checkpoint"]).is_dir() and not state["active"]
    assert query(db, "SELECT count(*) FROM metrics_lensmodelversion WHERE is_active") == [(0,)]


@pytest.mark.parametrize("broker", ["file"], indirect=True)
def test_a_training_out_of_attempts_is_marked_failed_with_its_partial_checkpoint_removed(embedded):
    db, env, logs = embedded["db"], embedded["env"], embedded["dir"]
    env["JOB_MAX_ATTEMPTS"] = "1"
    version_id = int(step(env, "queue", "lens", str(embedded["encoder"]), str(EPOCHS)).split()[-1])
    best = embedded["dir"] / "lens" / f"v{version_id}" / "best"

    worker = embedded["start_worker"]()
    # Killed after the first epoch saved its best checkpoint: a half-trained model on disk.
    wait_for(lambda: best.is_dir() and bool(lens_state(db, version_id)["epochs"]), "the first epoch", 180, logs)
    kill(worker, env)
    embedded["start_worker"]()
    wait_for(lambda: lens_state(db, version_id)["status"] == "failed", "the training to be marked failed", 60, logs)
    state = lens_state(db, version_id)
    assert "Interrupted" in state["error"] and "Start a new training run" in state["error"]
    assert state["checkpoint"] == "" and not state["active"] and state["attempts"] == 1
    assert not best.exists()  # nothing half-trained is left to be taken for a result
