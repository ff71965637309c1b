"""Optional error reporting: Sentry is initialised only when SENTRY_DSN is set, and never sends
request bodies, cookies, headers or user data (send_default_pii off, bodies never attached)."""

from __future__ import annotations

from typing import Any


def sentry_init(dsn: str, *, environment: str = "production", **options: Any) -> bool:
    """Start error reporting for this process; returns whether it was started."""
    if not dsn:
        return False
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=environment,
        integrations=[DjangoIntegration(), CeleryIntegration()],
        # Only the two above: the AI clients' integrations would record the agents' calls, and importing
        # every installed library's made each process start seconds later.
        auto_enabling_integrations=False,
        send_default_pii=False,
        max_request_body_size="never",
        include_local_variables=False,
        traces_sample_rate=0.0,
        **options,
    )
    return True
