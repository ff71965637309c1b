"""ASGI entry point of the web process: gunicorn's asyncio worker (config/gunicorn_conf.py) serves this
front, which reads each request whole before a thread runs Django's WSGI handler (config/front.py)."""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
_wsgi = get_wsgi_application()

from config.front import BufferedFront  # noqa: E402 - after Django is set up

application = BufferedFront(
    _wsgi,
    threads=settings.ENGRAM["WEB_THREADS"],
    max_body_bytes=settings.ENGRAM["MAX_BODY_BYTES"],
    body_idle_seconds=settings.ENGRAM["BODY_TIMEOUT_SECONDS"],
    body_seconds=settings.ENGRAM["BODY_DEADLINE_SECONDS"],
)
