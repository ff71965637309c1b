"""What Django's debug page (DEBUG=True, asked for with DJANGO_DEBUG=true) may show of the settings."""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter


class AddressHidingFilter(SafeExceptionReporterFilter):
    """Django hides settings named like a key, token, secret or password; a URL or DSN carries the
    user, host and often the password of a database or a Redis (DATABASE_OWNER_URL, REDIS_URL,
    CELERY_BROKER_URL, SENTRY_DSN), and CACHES its LOCATION: they are hidden too."""

    hidden_settings = re.compile("API|TOKEN|KEY|SECRET|PASS|SIGNATURE|HTTP_COOKIE|URL|DSN|LOCATION", flags=re.I)
