"""Test settings: base, with fast hashing and a throw-away var/ folder."""

import os
import tempfile
import uuid

os.environ.setdefault("RANKRATE_VAR_DIR", tempfile.mkdtemp(prefix="rankrate-test-"))

from .base import *  # noqa: F403

DEBUG = False
SECRET_KEY = "test-only-secret-key"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = ["*"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405 (whitenoise warns about a missing folder)
# A fresh key space per run, so a shared Redis cache never serves another run's entries.
CACHES["default"]["KEY_PREFIX"] = f"test-{uuid.uuid4().hex}"  # noqa: F405
# Tests close a connection after each request, as they always have: a connection kept by a thread the test
# runner does not own (Channels' executor, the live server's) would stop the test database from being dropped.
# tests/core/test_asgi.py keeps connections where it checks that the request threads reuse them.
DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("DB_CONN_MAX_AGE", "0"))  # noqa: F405
JOB_HEARTBEAT_SECONDS = int(os.environ.get("JOB_HEARTBEAT_SECONDS", "3600"))  # no beats inside test transactions
# Attempt limits and sign-in lock-outs count in this process's memory, emptied before each test (tests/conftest.py).
CACHES["throttle"] = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "throttle"}  # noqa: F405
SILENCED_SYSTEM_CHECKS = ["axes.W001"]  # the tests' one process (base.py says why axes warns)
# Without Redis, live events go through the feed (core.events); websockets read it often so tests wait little.
LIVE_EVENTS_POLL_SECONDS = 0.1
