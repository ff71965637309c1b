"""The test suite: the real PostgreSQL with pgvector and the real Redis, on their own database numbers."""

import os
from urllib.parse import urlparse, urlunparse

from config.settings.base import *  # noqa: F403
from config.settings.base import CACHES, ENGRAM, env

DEBUG = False


def _redis_for_worker(url: str, worker: str) -> str:
    """pytest-xdist runs the suite in workers gw0, gw1, ...; each flushes its Redis database between
    tests, so each takes its own number after the configured one (the test database gets its suffix
    from pytest-django)."""
    if not worker.startswith("gw"):
        return url
    parts = urlparse(url)
    base = int(parts.path.strip("/") or 0)
    return urlunparse(parts._replace(path=f"/{(base + int(worker[2:])) % 16}"))


REDIS_URL = _redis_for_worker(
    env.str("TEST_REDIS_URL", default="redis://127.0.0.1:6379/9"), os.environ.get("PYTEST_XDIST_WORKER", "")
)
CACHES["default"]["LOCATION"] = REDIS_URL
CACHES["default"]["KEY_PREFIX"] = "engram-test"
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Test data lives in a transaction that a helper's own connection cannot see; the tests that read
# beside the request commit their data (tests/router/test_parallel_reads.py).
ENGRAM["PARALLEL_READERS"] = 0
ENGRAM["EMBEDDER"] = env.str("ENGRAM_TEST_EMBEDDER", default="core.embedding.HashingEmbedder")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    "archive": {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Tests create their database as the owner, then run as the worker's role (tests/conftest.py);
# transactional tests need TRUNCATE to reset tables between tests.
ENGRAM_GRANT_TRUNCATE = True
_owner = env.str("DATABASE_OWNER_URL", default="")
if _owner:
    _owner_cfg = env.db_url_config(_owner)
    # Parallel runs on one server (several checkouts, several developers) each name their own database.
    DATABASES["default"]["TEST"] = {"NAME": env.str("ENGRAM_TEST_DB_NAME", default="test_engram")}  # noqa: F405
    ENGRAM_TEST_APP_CREDENTIALS = (DATABASES["default"]["USER"], DATABASES["default"]["PASSWORD"])  # noqa: F405
    # The suite runs Celery tasks eagerly, in its own process, so the process plays the worker and logs
    # in as the worker's role (the application's privileges, and the only one that may erase); the
    # web's own login, which may not, is tested apart (tests/tenants/test_worker_role.py).
    _worker = env.str("ENGRAM_WORKER_DATABASE_URL", default="")
    _worker_cfg = env.db_url_config(_worker) if _worker else {}
    ENGRAM_TEST_WORKER_CREDENTIALS = (
        (_worker_cfg["USER"], _worker_cfg.get("PASSWORD", "")) if _worker else ENGRAM_TEST_APP_CREDENTIALS
    )
    DATABASES["default"]["USER"] = _owner_cfg["USER"]  # noqa: F405
    DATABASES["default"]["PASSWORD"] = _owner_cfg.get("PASSWORD", "")  # noqa: F405
