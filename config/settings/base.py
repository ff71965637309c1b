"""Settings shared by every environment. Everything that differs between machines comes from the environment."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import environ

from config.logs import log_format_choose

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
# The run and test commands write the addresses of the embedded services here; real deployments use
# the environment and have no such file. It names the database owner, so the run command starts web,
# worker and beat with ENGRAM_ENV_FILE empty: they read no file and get only the logins they need.
_local_env = env.str("ENGRAM_ENV_FILE", default=str(BASE_DIR / ".data" / "engram.env"))
if _local_env and Path(_local_env).is_file():
    environ.Env.read_env(_local_env, overwrite=False)


def env_secret(name: str, default: str | None = None) -> str:
    """Read NAME, or the file named by NAME_FILE (docker and Kubernetes secrets)."""
    file_path = env.str(f"{name}_FILE", default="")
    if file_path:
        return Path(file_path).read_text().strip()
    if default is None:
        return env.str(name)
    return env.str(name, default=default)


SECRET_KEY = env_secret("DJANGO_SECRET_KEY", default="insecure-dev-key-change-me")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
# Should DEBUG be switched on, its pages hide every setting that holds an address with credentials
# (DATABASE_OWNER_URL, REDIS_URL, ...) as well as Django's own list (keys, tokens, passwords).
DEFAULT_EXCEPTION_REPORTER_FILTER = "config.debug.AddressHidingFilter"
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "django_prometheus",
    "tenants",
    "api",
    "episodic",
    "semantic",
    "procedural",
    "router",
    "consolidation",
    "privacy",
    "dashboard",
    "demo",
    "evaluation",
]

MIDDLEWARE = [
    # First: a Host not allowed is a 400 problem before anything else reads the request, in DEBUG too.
    "api.middleware.AllowedHostMiddleware",
    "django_prometheus.middleware.PrometheusBeforeMiddleware",
    "config.logs.RequestContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "api.middleware.BodySizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "tenants.middleware.TenantScopeMiddleware",
    "django_prometheus.middleware.PrometheusAfterMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
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

# DATABASE_URL is the application's role: neither superuser nor BYPASSRLS, so row-level security
# holds. DATABASE_OWNER_URL owns the schema; only `migrate` and test-database creation use it.
DATABASES = {"default": env.db("DATABASE_URL", default="postgres://engram_app:engram_app@127.0.0.1:54329/engram")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# Lookups by key on the read path (core.db.fetch_prepared) are prepared by a connection after this many
# runs; unset (Django's default), nothing is prepared, as a transaction-mode pooler needs.
DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = env.int("DB_PREPARE_THRESHOLD", default=None)
DATABASE_OWNER_URL = env.str("DATABASE_OWNER_URL", default="")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# REDIS_URL holds state (scratchpads, idempotency locks, throttles) and must not evict; the cache may
# live on an instance that does (CACHE_URL), and the broker on its own database (CELERY_BROKER_URL).
REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env.str("CACHE_URL", default=REDIS_URL),
        "KEY_PREFIX": env.str("CACHE_KEY_PREFIX", default="engram"),
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
# Dates in ISO order and a 24-hour clock (config/formats/en/formats.py).
FORMAT_MODULE_PATH = "config.formats"

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "templates" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "archive": {
        "BACKEND": env.str("ARCHIVE_STORAGE_BACKEND", default="django.core.files.storage.FileSystemStorage"),
        "OPTIONS": {"location": env.str("ARCHIVE_ROOT", default=str(BASE_DIR / ".data" / "archive"))},
    },
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = BASE_DIR / ".data" / "media"
# Whole-tenant exports filed from the admin (privacy.export), one folder per tenant id.
EXPORT_ROOT = env.str("EXPORT_ROOT", default=str(BASE_DIR / ".data" / "exports"))
LOGIN_URL = "admin:login"

# --- API conventions -------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.HasKeyScope"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.LimitedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.OrjsonRenderer"],
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.TenantRateThrottle"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.CreatedCursorPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "api.problems.problem_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "api.schema.ProblemAutoSchema",
    "UNAUTHENTICATED_USER": None,
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Engram API",
    "DESCRIPTION": "Layered memory for AI agents: episodic, semantic, procedural and working memory, "
    "and a router that serves a token-budgeted context with provenance.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    # Swagger UI and Redoc from the installed sidecar package's static files, not a CDN's @latest.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The tenant's own ids in paths (api.converters): any text, `/` included, percent-encoded.
    "PATH_CONVERTER_OVERRIDES": {
        "extid": {"type": "string", "minLength": 1, "maxLength": 255},
        "session_id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            "not": {"pattern": "/(end|scratchpad)$"},
            "description": "A session id; ids ending in /end or /scratchpad are refused when written.",
        },
    },
}

_EMBEDDING_INT8 = env.bool("ENGRAM_EMBEDDING_INT8", default=True)
_EMBEDDING_ONNX = env.str("ENGRAM_EMBEDDING_ONNX", default="") or str(
    BASE_DIR / ".data" / "models" / "all-MiniLM-L6-v2.onnx"
)
ENGRAM: dict[str, Any] = {
    # Request limits: each gives a 413 or a 400 problem.
    "MAX_BODY_BYTES": env.int("ENGRAM_MAX_BODY_BYTES", default=8 * 1024 * 1024),
    # The web front (config/front.py) reads a body whole before a thread runs Django: each part must
    # come within BODY_TIMEOUT_SECONDS of the last, the whole within BODY_DEADLINE_SECONDS, or the
    # answer is a 400; WEB_THREADS threads per worker process run the requests read.
    "BODY_TIMEOUT_SECONDS": env.float("ENGRAM_BODY_TIMEOUT_SECONDS", default=15.0),
    "BODY_DEADLINE_SECONDS": env.float("ENGRAM_BODY_DEADLINE_SECONDS", default=60.0),
    "WEB_THREADS": env.int("ENGRAM_WEB_THREADS", default=4),
    "MAX_BATCH": env.int("ENGRAM_MAX_BATCH", default=1000),
    "MAX_TEXT_CHARS": env.int("ENGRAM_MAX_TEXT_CHARS", default=32_000),
    # An episode's content (a tool's output, a document): passages make its cost independent of its
    # length; the bound is PostgreSQL's 1 MB tsvector, which 200,000 characters of all-different
    # words fill to 0.4 MB (docs/episodic.md). The body limit still bounds a batch.
    "MAX_EPISODE_CHARS": env.int("ENGRAM_MAX_EPISODE_CHARS", default=200_000),
    "MAX_SCRATCHPAD_BYTES": env.int("ENGRAM_MAX_SCRATCHPAD_BYTES", default=64 * 1024),
    # How long a scratchpad's shadow outlives the scratchpad, for the expiry sweep to summarise it.
    "SCRATCHPAD_SHADOW_GRACE_SECONDS": env.int("ENGRAM_SCRATCHPAD_SHADOW_GRACE_SECONDS", default=3 * 24 * 3600),
    # Pluggable parts, named by dotted path.
    "EMBEDDER": env.str("ENGRAM_EMBEDDER", default="core.embedding.OnnxMiniLMEmbedder"),
    # The ONNX file that `manage.py export_embedding_model` writes and OnnxMiniLMEmbedder reads
    # (ENGRAM_EMBEDDING_ONNX names the float file): by default the int8 file beside it, half the CPU a
    # text and recall within 0.01 of float32 on every set (docs/benchmarks/int8.md);
    # ENGRAM_EMBEDDING_INT8=false reads the float file. Set it on every process of a deployment alike,
    # and after a switch run `manage.py reembed --all` (docs/production.md).
    "EMBEDDING_INT8": _EMBEDDING_INT8,
    "EMBEDDING_ONNX": _EMBEDDING_ONNX.removesuffix(".onnx") + ".int8.onnx" if _EMBEDDING_INT8 else _EMBEDDING_ONNX,
    # The float file, whichever one is read (the tests and benches compare the two).
    "EMBEDDING_ONNX_FLOAT": _EMBEDDING_ONNX,
    # Read-your-writes: an API write of at most this many passages is embedded before it commits, so
    # that it is found by meaning at once; bigger writes (imports) wait for the worker. 0: always wait.
    "INLINE_EMBED_MAX_PASSAGES": env.int("ENGRAM_INLINE_EMBED_MAX_PASSAGES", default=32),
    # The vector channel over passages: rank a subject's passages by Hamming distance on their binary
    # codes, then re-score this many exactly by cosine, per 100 rows the channel returns (the router's
    # pool is 30 to 400). A subject with no more passages than that is scanned exactly; 0: always.
    # docs/benchmarks/vector_prefilter.md
    "VECTOR_PREFILTER_CANDIDATES": env.int("ENGRAM_VECTOR_PREFILTER_CANDIDATES", default=400),
    "EXTRACTOR": env.str("ENGRAM_EXTRACTOR", default=""),
    # The offline extractor's dependency-parse reader (consolidation/extractors/reading.py): off until it
    # passes the LoCoMo gate; on LoCoMo conv-26 its facts cost all layers 0.06 grounded recall at 1K
    # (docs/consolidation.md, "Reading").
    "PARSE_READER": env.bool("ENGRAM_PARSE_READER", default=False),
    "CONTEXT_POLICY": env.str("ENGRAM_CONTEXT_POLICY", default="router.policy.HeuristicPolicy"),
    # Parts of the context's packing switched off, by name (router.parts), for ablations; none by default.
    "PACKER_OFF": env.list("ENGRAM_PACKER_OFF", default=[]),
    # A tenant's learned value (router.learning, docs/router.md): trained on at most MAX contexts with
    # feedback, once there are MIN_CONTEXTS of them and MIN_USED used items; rolled back on MIN_MEASURED;
    # a model on trial is decided on from MIN_TRIAL contexts with feedback, and its trial ends at MAX_TRIAL.
    "VALUE_MODEL_MAX_CONTEXTS": env.int("ENGRAM_VALUE_MODEL_MAX_CONTEXTS", default=5000),
    "VALUE_MODEL_MIN_CONTEXTS": env.int("ENGRAM_VALUE_MODEL_MIN_CONTEXTS", default=200),
    "VALUE_MODEL_MIN_USED": env.int("ENGRAM_VALUE_MODEL_MIN_USED", default=50),
    "VALUE_MODEL_MIN_MEASURED": env.int("ENGRAM_VALUE_MODEL_MIN_MEASURED", default=50),
    "VALUE_MODEL_MIN_TRIAL": env.int("ENGRAM_VALUE_MODEL_MIN_TRIAL", default=200),
    "VALUE_MODEL_MAX_TRIAL": env.int("ENGRAM_VALUE_MODEL_MAX_TRIAL", default=2000),
    # Helper threads per process for reads beside the request (router.helper_threads); 0 reads in line.
    "PARALLEL_READERS": env.int("ENGRAM_PARALLEL_READERS", default=4),
    "ANTHROPIC_MODEL": env.str("ENGRAM_ANTHROPIC_MODEL", default="claude-sonnet-4-5"),
    "IDEMPOTENCY_TTL_HOURS": env.int("ENGRAM_IDEMPOTENCY_TTL_HOURS", default=24),
    # Failed authentications allowed per window, per client address and per key prefix; past either,
    # every failed attempt from there is a 429 until the window ends, while a right key still passes
    # (0 turns a limit off).
    "AUTH_FAILURES_PER_ADDRESS": env.int("ENGRAM_AUTH_FAILURES_PER_ADDRESS", default=30),
    "AUTH_FAILURES_PER_PREFIX": env.int("ENGRAM_AUTH_FAILURES_PER_PREFIX", default=100),
    "AUTH_FAILURE_WINDOW_SECONDS": env.int("ENGRAM_AUTH_FAILURE_WINDOW_SECONDS", default=300),
    # Addresses or networks of the reverse proxies in front of the web process: only from them is
    # X-Forwarded-For read for the client's address (core/addresses.py); config/gunicorn_conf.py gives
    # gunicorn the same list for X-Forwarded-Proto. Empty: the peer is the client, nothing is forwarded.
    "TRUSTED_PROXIES": env.list("ENGRAM_TRUSTED_PROXIES", default=[]),
}
ANTHROPIC_API_KEY = env_secret("ANTHROPIC_API_KEY", default="")
# /metrics on the API port: served to a bearer of METRICS_TOKEN, or to a client address in
# METRICS_ALLOWED_ADDRESSES (addresses or networks); nothing else.
METRICS_TOKEN = env_secret("METRICS_TOKEN", default="")
METRICS_ALLOWED_ADDRESSES = env.list("METRICS_ALLOWED_ADDRESSES", default=["127.0.0.1", "::1"])

# --- Celery: no task is lost when a worker dies ------------------------------------------------
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)}
# Time limits stay below the visibility timeout, or a slow task would be delivered twice while it runs.
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=1800)
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=1500)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
# Erasure (a legal deadline) and consolidation (heavy, per session) have queues of their own, so neither
# waits behind the other or behind bulk embedding in "celery"; every worker command names all three
# (scripts/run.py, docker-compose.yml). A worker with `-Q erasure` alone keeps erasure off busy pools.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "privacy.tasks.execute_erasure": {"queue": "erasure"},
    "privacy.tasks.process_erasure_requests": {"queue": "erasure"},
    "consolidation.tasks.consolidate_session": {"queue": "consolidation"},
    "consolidation.tasks.consolidate_tenant": {"queue": "consolidation"},
    "consolidation.tasks.consolidation_sweep": {"queue": "consolidation"},
}
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)

PROMETHEUS_EXPORT_MIGRATIONS = False

# One JSON line per record (LOG_FORMAT=plain for a terminal, auto for plain at a terminal only: the run
# command), each with its request, tenant and task ids (config/logs.py). The request line itself is
# gunicorn's access log; the task line is engram.task.
LOG_FORMAT = log_format_choose(configured=env.str("LOG_FORMAT", default="json"), stream=sys.stderr)
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"context": {"()": "config.logs.ContextFilter"}},
    "formatters": {"json": {"()": "config.logs.JsonFormatter"}, "plain": {"()": "config.logs.PlainFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["context"]}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # A 404 or a 4xx problem is an answer, not an incident (and its line would name the path, which
        # holds subject ids); server errors are still logged, by the problem handler.
        "django.request": {"level": "ERROR"},
        # engram.task writes the one line per task; Celery's own would repeat it, return value included.
        "celery.app.trace": {"level": "WARNING"},
        "celery.worker.strategy": {"level": "WARNING"},
        # The model library's deprecation notices about its own internals, and its loading chatter.
        "sentence_transformers": {"level": "ERROR"},
    },
}
# Serve static files straight from the finders too, so the dev server needs no collectstatic.
WHITENOISE_USE_FINDERS = True

SENTRY_DSN = env_secret("SENTRY_DSN", default="")
if SENTRY_DSN:
    from config.sentry import sentry_init

    sentry_init(SENTRY_DSN, environment=env.str("SENTRY_ENVIRONMENT", default="production"))
