"""Production: every secret must come from the environment, and nothing starts without them."""

from config.settings.base import *  # noqa: F403
from config.settings.base import env, env_secret

DEBUG = False
SECRET_KEY = env_secret("DJANGO_SECRET_KEY")
DATABASES = {"default": env.db("DATABASE_URL")}
DATABASES["default"]["CONN_MAX_AGE"] = env.int("DB_CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = env.int("DB_PREPARE_THRESHOLD", default=None)
REDIS_URL = env.str("REDIS_URL")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")
# No SECURE_PROXY_SSL_HEADER: Django would believe X-Forwarded-Proto from any caller. gunicorn sets the
# scheme from it only when the peer is one of ENGRAM_TRUSTED_PROXIES (config/gunicorn_conf.py).
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
