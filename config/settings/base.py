"""Settings shared by every environment, read from environment variables.

Not used on its own: `local` (development, the default of manage.py, asgi, wsgi and celery),
`production` (asked for with DJANGO_SETTINGS_MODULE=config.settings.production) and `test` build on
it. DATABASE_URL defaults to a SQLite file under var/; REDIS_URL is optional (without it: in-memory
channel layer and a file-system Celery broker, so the embedded app needs no servers).
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from config.datasets import simpeval_data_dir
from core.numbers import flag_word

# Lets Django's generic classes be subscripted at runtime (admin.ModelAdmin[Campaign]), as mypy wants.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("RANKRATE_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    flag = flag_word(value)
    if flag is not None:
        return flag
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# --- Core (each environment's module decides DEBUG, SECRET_KEY and ALLOWED_HOSTS) ---
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
# The key `local` uses when SECRET_KEY is not set; `production` refuses it.
DEVELOPMENT_SECRET_KEY = "django-insecure-rank-and-rate-development-only"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # swagger-ui's files, served from the installed package (no CDN, works offline)
    "channels",
    "core",
    "annotation",
    "evaluation",
    "metrics",
    "frontend",
]

# daphne's app only replaces `runserver` with its ASGI server (websockets included). Importing it installs
# twisted's reactor (~0.2 s, ~20 MB) in every process, so it is added for `runserver` alone; the served app
# runs under the `daphne` command (scripts/run.sh, the Dockerfile), which does not need it.
if sys.argv[1:2] == ["runserver"]:
    INSTALLED_APPS.insert(0, "daphne")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "core.middleware.RefuseNulMiddleware",
    "core.middleware.DatabaseBusyMiddleware",  # SQLite's "database is locked": 503 + Retry-After, not a 500
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # ETag on GET answers: a page re-reading an unchanged assignment (and its draft) gets a bodiless 304.
    "django.middleware.http.ConditionalGetMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "annotation.User"
LOGIN_URL = "frontend:login"
LOGIN_REDIRECT_URL = "frontend:home"
LOGOUT_REDIRECT_URL = "frontend:login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database ---------------------------------------------------------------
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'rankrate.sqlite3'}"),
        # Seconds a thread keeps its connection. Every process that keeps one does so in long-lived threads:
        # the web process's request threads (core.asgi), Celery's workers, a command's main thread.
        conn_max_age=int(os.environ.get("DB_CONN_MAX_AGE", "60")),
        conn_health_checks=True,  # a kept connection that broke (database restarted) is replaced, not used
    )
}
# Behind PgBouncer in transaction pooling (docker-compose.yml), server-side cursors (`.iterator()`) must be off.
DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env_bool("DB_DISABLE_SERVER_SIDE_CURSORS", False)
# On PostgreSQL the annotators' prepared reads (core.prepared) are server-side prepared statements, planned
# once per connection; a transaction pooler does not keep a session's statements, so unless set here they
# are on exactly when server-side cursors are (the rule: core.prepared.server_side_prepared).
if "DB_SERVER_SIDE_PREPARED" in os.environ:
    DATABASES["default"]["SERVER_SIDE_PREPARED"] = env_bool("DB_SERVER_SIDE_PREPARED")  # type: ignore[typeddict-unknown-key]
# A web process works on at most this many HTTP requests at once, on as many long-lived request threads
# (core.asgi, core.concurrency), so it holds at most this many database connections for HTTP (0: no cap
# on requests; 16 threads). Few threads serve more: one process's Python runs on one core at a time, and
# every thread more contends for it and for PostgreSQL's locks (README, "PostgreSQL and Redis": 4 threads
# gave more requests per second at less CPU per request than 16). Requests beyond it wait their turn; a
# slow one (an import, an export) holds one thread, so leave room for those where they are frequent.
HTTP_MAX_CONCURRENCY = int(os.environ.get("HTTP_MAX_CONCURRENCY", "4"))
# Of those, how many annotators' requests (claim, page, autosave, submit: views marked
# core.concurrency.annotation_lane) run at once; the other requests share the rest, so neither kind waits
# for the other's threads (0: one lane for all). 2 served the most annotators per core (README).
HTTP_ANNOTATION_CONCURRENCY = int(os.environ.get("HTTP_ANNOTATION_CONCURRENCY", "2"))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default serves a small study (tens of annotators plus the worker) without
    # "database is locked": WAL lets readers run beside the one writer; BEGIN IMMEDIATE takes the write
    # lock when a transaction starts, so the busy timeout is honoured (a deferred transaction that
    # reads first and then writes is refused at once, without waiting, when another writer holds the lock).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": int(os.environ.get("SQLITE_BUSY_TIMEOUT", "30")),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
# The image collects static files at build time, outside the var/ volume (STATIC_ROOT in the Dockerfile).
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "staticfiles"))
MEDIA_ROOT = VAR_DIR / "media"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG

# --- Request and upload limits ------------------------------------------------
# An imported file (API, pages, admin, commands: annotation.services.imports.campaign_import) is refused with
# a 413 past this size, before it is parsed; the API checks Content-Length before reading the body.
MAX_UPLOAD_BYTES = int(os.environ.get("MAX_UPLOAD_BYTES", str(25 * 1024 * 1024)))
# What one import may hold besides its bytes (annotation.services.imports.import_limits, one rule for every
# path): characters of any one text, sources, outputs. Its rows are written in transactions of about
# IMPORT_ROWS_PER_WRITE rows, so other writers wait for one of them at most (docs/data-import.md).
IMPORT_MAX_TEXT_CHARS = int(os.environ.get("IMPORT_MAX_TEXT_CHARS", "20000"))
IMPORT_MAX_SOURCES = int(os.environ.get("IMPORT_MAX_SOURCES", "300000"))
IMPORT_MAX_OUTPUTS = int(os.environ.get("IMPORT_MAX_OUTPUTS", "1500000"))
IMPORT_ROWS_PER_WRITE = int(os.environ.get("IMPORT_ROWS_PER_WRITE", "1000"))
# An unfinished import whose last write step is older than this was killed (daphne restarted): its rows are
# removed by the next import into the campaign, the job reaper or `manage.py import_cleanup`.
IMPORT_STALE_SECONDS = int(os.environ.get("IMPORT_STALE_SECONDS", "300"))
# Non-file request bodies (JSON, forms) past this size are refused (413 on the API).
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("MAX_REQUEST_BYTES", str(8 * 1024 * 1024)))
# Uploaded files past this size are spooled to a temporary file instead of memory.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# Any request body past this size is refused with 413 while it streams (declared Content-Length at once,
# chunked bodies once they pass it), before Django buffers it (core.body_limit, core.daphne_body_limit).
# Default: the larger of the two limits above plus 1 MiB for a multipart envelope and form fields; 0: no cap.
MAX_BODY_BYTES = int(os.environ.get("MAX_BODY_BYTES",
                                    str(max(MAX_UPLOAD_BYTES, DATA_UPLOAD_MAX_MEMORY_SIZE) + 1024 * 1024)))

# --- Redis, Channels, Celery ------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
    }
    CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL)
    CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", REDIS_URL)
    # A message not acknowledged within this time (its worker was killed) is delivered again. A job
    # still running when that happens is not run twice: the second delivery finds its heartbeat fresh.
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))
    }
    # Shared by every web process and worker (report caches, model registry state).
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    _broker_dir = VAR_DIR / "celery"
    for _sub in ("queue", "processed", "results", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
    CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", f"file://{_broker_dir / 'results'}")

# Live events for the pages (core.events): over the channel layer when it is shared by every process (Redis);
# otherwise (the embedded default: in-memory layer, a separate Celery worker) through a table that each open
# websocket reads every LIVE_EVENTS_POLL_SECONDS, keeping rows for LIVE_EVENTS_KEEP_SECONDS and at most
# LIVE_EVENTS_MAX_ROWS of them.
LIVE_EVENTS_FEED = env_bool("LIVE_EVENTS_FEED", not REDIS_URL)
LIVE_EVENTS_POLL_SECONDS = float(os.environ.get("LIVE_EVENTS_POLL_SECONDS", "1"))
LIVE_EVENTS_KEEP_SECONDS = int(os.environ.get("LIVE_EVENTS_KEEP_SECONDS", "600"))
LIVE_EVENTS_MAX_ROWS = int(os.environ.get("LIVE_EVENTS_MAX_ROWS", "10000"))

# Delivery that survives a killed worker: a task is acknowledged when it ends, and a task whose worker
# process died goes back to the queue. The file-system broker removes a message when it hands it out, so
# there (and for a worker that never comes back) the job reaper requeues what a dead worker left
# "running": when a worker starts (worker_ready) and every JOB_REAP_INTERVAL_SECONDS inside each worker.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
JOB_HEARTBEAT_SECONDS = int(os.environ.get("JOB_HEARTBEAT_SECONDS", "15"))
JOB_STALE_SECONDS = int(os.environ.get("JOB_STALE_SECONDS", "120"))
JOB_REAP_INTERVAL_SECONDS = int(os.environ.get("JOB_REAP_INTERVAL_SECONDS", "60"))
JOB_MAX_ATTEMPTS = int(os.environ.get("JOB_MAX_ATTEMPTS", "3"))
# Job budgets (core.services.job_budget_check): queued + running background work (jobs, testbed runs, metric
# scoring, learned-metric training) per user (429 past it) and on the whole platform (409 past it).
JOB_MAX_QUEUED_PER_USER = int(os.environ.get("JOB_MAX_QUEUED_PER_USER", "5"))
JOB_MAX_QUEUED_TOTAL = int(os.environ.get("JOB_MAX_QUEUED_TOTAL", "50"))
# Heavy reads (core.heavy: a campaign's report and metrics comparison): cached per data version; a miss is
# computed by at most HEAVY_READS_AT_ONCE requests per web process, others get 429 + Retry-After at once.
HEAVY_READS_AT_ONCE = int(os.environ.get("HEAVY_READS_AT_ONCE", "1"))
HEAVY_READ_WAIT_SECONDS = float(os.environ.get("HEAVY_READ_WAIT_SECONDS", "0"))
HEAVY_READ_CACHE_SECONDS = int(os.environ.get("HEAVY_READ_CACHE_SECONDS", "3600"))

CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_ROUTES = {"metrics.tasks.lens_train_run": {"queue": "gpu"}}
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1

# --- REST API ---------------------------------------------------------------
# Tokens (POST /api/auth/token/) expire API_TOKEN_TTL_SECONDS after they were issued and are deleted at
# logout (POST /api/auth/logout/ or the pages' logout). The token scheme comes first so that anonymous
# and bad-token requests get 401 with `WWW-Authenticate: Token`, not 403.
API_TOKEN_TTL_SECONDS = int(os.environ.get("API_TOKEN_TTL_SECONDS", str(7 * 24 * 3600)))
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "core.api.authentication.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "core.api.parsers.SafeJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "core.api.exceptions.exception_handler",
}
# --- Sign-in lock-out, client addresses, attempt limits (docs/security.md) ----------------------
# Behind this many reverse proxies the client's address is the one the outermost proxy put into
# X-Forwarded-For; with 0 (no proxy) X-Forwarded-For is ignored. One number for DRF's throttles, the
# pages' limits and django-axes (core.throttle.client_address is the rule).
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT") or os.environ.get("NUM_PROXIES") or "0")
if TRUSTED_PROXY_COUNT < 0:
    raise ImproperlyConfigured(f"TRUSTED_PROXY_COUNT={TRUSTED_PROXY_COUNT} is negative")
REST_FRAMEWORK["NUM_PROXIES"] = TRUSTED_PROXY_COUNT
# Attempt limits (core.throttle), counted in the "throttle" cache: the default cache's store, its own keys.
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "auth": os.environ.get("THROTTLE_AUTH", "10/min"),  # sign-in requests (token API, /login/) per address
    "tutorial": os.environ.get("THROTTLE_TUTORIAL", "5/hour"),  # checks per annotator and practice sentence
    "crowd": os.environ.get("THROTTLE_CROWD", "20/hour"),  # crowd-link arrivals per address
    "invite": os.environ.get("THROTTLE_INVITE", "10/hour"),  # invite sign-ups (form posts) per address
    "accounts": os.environ.get("THROTTLE_ACCOUNTS", "50/hour"),  # annotator accounts a researcher makes
}
CACHES["throttle"] = {**CACHES["default"], "KEY_PREFIX": "throttle"}
# django-axes: LOGIN_FAILURE_LIMIT wrong passwords from one address, or for one username, lock sign-in
# (pages, admin, token API) for LOGIN_COOLOFF_MINUTES; the right password is refused meanwhile.
INSTALLED_APPS.append("axes")
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
MIDDLEWARE.append("axes.middleware.AxesMiddleware")
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"  # no database write per failure (SQLite's one writer)
AXES_CACHE = "throttle"
if not REDIS_URL:
    # axes warns that an in-memory cache is not shared between processes; without Redis the app is one web
    # process (as its in-memory channel layer already requires), whose threads share it.
    SILENCED_SYSTEM_CHECKS = ["axes.W001"]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = env_list("LOGIN_LOCKOUT_PARAMETERS", "ip_address,username")
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # the lock ends when the answer said it would
AXES_CLIENT_IP_CALLABLE = "core.throttle.client_address"
AXES_LOCKOUT_CALLABLE = "frontend.throttling.locked_out_response"

SPECTACULAR_SETTINGS = {
    "TITLE": "Rank & Rate API",
    "DESCRIPTION": "Human evaluation of text simplification (Rank & Rate) and the LENS metric.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No deep links: Swagger UI puts each operation's link inside the button that opens it (a link in a button
    # is unreachable by keyboard and screen readers: axe-core's nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    # Every operation documents the errors the API answers (core.api.schema adds them).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "core.api.schema.add_error_responses"],
    # A learned version's kind and status are used by its list and detail serializers, beside other "kind" and
    # "status" choice sets (training events, jobs...): name them, so the schema's names do not depend on a hash.
    "ENUM_NAME_OVERRIDES": {
        "LearnedVersionKindEnum": "metrics.models.LearnedVersion.Kind",
        "LearnedVersionStatusEnum": "metrics.models.LearnedVersion.Status",
    },
}

# --- Product ----------------------------------------------------------------
SIMPEVAL_DATA_DIR = simpeval_data_dir()

def learned_env(name: str, default: str = "") -> str:
    """``LEARNED_<name>`` from the environment, else the older spelling ``LENS_<name>`` (from when LENS was the
    only learned metric), else ``default``."""
    return os.environ.get(f"LEARNED_{name}") or os.environ.get(f"LENS_{name}") or default


LEARNED_CHECKPOINT_DIR = Path(learned_env("CHECKPOINT_DIR") or VAR_DIR / "lens")
# Torch devices ("cpu", "cuda", "cuda:1"); empty: CUDA when available, else CPU.
LEARNED_DEVICE = learned_env("DEVICE")  # training (train_metric, the gpu queue's worker)
LEARNED_SERVING_DEVICE = learned_env("SERVING_DEVICE")  # scoring (web processes, the default queue)
# The encoder's precision when a learned metric scores, on any device: "fp32" (default, as trained), "bf16"
# (bf16 autocast) or "int8" (linear layers dynamically quantised; CPU only). Both reduced precisions are
# faster but not rank-identical to fp32, so they are opt-in (docs/performance.md gives their speeds). Scores
# carry the precision in their signature. LENS_SERVING_INT8=1 is the oldest spelling of "int8".
LEARNED_SERVING_PRECISIONS = ("fp32", "bf16", "int8")
LEARNED_SERVING_PRECISION = learned_env("SERVING_PRECISION").strip().lower() or (
    "int8" if env_bool("LENS_SERVING_INT8") else "fp32"
)
if LEARNED_SERVING_PRECISION not in LEARNED_SERVING_PRECISIONS:
    raise ImproperlyConfigured(
        f"LEARNED_SERVING_PRECISION={LEARNED_SERVING_PRECISION!r} is not one of "
        f"{', '.join(LEARNED_SERVING_PRECISIONS)}"
    )
if LEARNED_SERVING_PRECISION == "int8" and LEARNED_SERVING_DEVICE.strip().lower() not in ("", "cpu"):
    raise ImproperlyConfigured(
        f"LEARNED_SERVING_PRECISION=int8 quantises for the CPU, but LEARNED_SERVING_DEVICE="
        f"{LEARNED_SERVING_DEVICE!r}; use bf16 or fp32 on a GPU"
    )
# Suite metrics (metrics.services.metric_scores): BERTScore and LENS scoring go to this queue ("" = default).
METRIC_GPU_QUEUE = os.environ.get("METRIC_GPU_QUEUE", "gpu")
METRIC_DEVICE = os.environ.get("METRIC_DEVICE", "")  # BERTScore's device on the worker ("" = cpu)
METRIC_OPTIONS: dict[str, dict[str, object]] = {}  # per family, e.g. {"bertscore": {"model": "/models/roberta-large"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
