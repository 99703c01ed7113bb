"""The embedded default (a SQLite file) serves 20 annotators claiming and submitting at once.

Before WAL and BEGIN IMMEDIATE every concurrent claim failed with "database is locked" (a deferred
transaction that reads and then writes is refused without waiting for the busy timeout).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.slow
def test_twenty_annotators_at_once_on_a_sqlite_file(tmp_path):
    db_file = tmp_path / "load.sqlite3"
    run = subprocess.run(
        [sys.executable, "-m", "tests.annotation.sqlite_load", str(db_file), "20", "3"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["errors"] == []
    # Every annotator submitted three sources, each exactly once, three outputs each.
    assert result["submitted"] == result["annotations"] == 60
    assert result["judgements"] == 180


def test_sqlite_settings_use_wal_and_immediate_transactions(settings):
    from config.settings import base

    if base.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        pytest.skip("the embedded SQLite default is not in use (DATABASE_URL is set)")
    options = base.DATABASES["default"]["OPTIONS"]
    assert options["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in options["init_command"]
    assert options["timeout"] >= 5
