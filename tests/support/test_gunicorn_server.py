"""The test gunicorn serves this test worker's data: its database and its Redis number."""

from __future__ import annotations

import pytest
from django.conf import settings

from config.settings.test import _redis_for_worker
from tests.support.gunicorn_server import server_environ


def test_the_server_uses_this_workers_redis_number(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    monkeypatch.setattr(settings, "REDIS_URL", _redis_for_worker("redis://127.0.0.1:6379/9", "gw3"))
    environ = server_environ()
    assert "PYTEST_XDIST_WORKER" not in environ
    assert environ["TEST_REDIS_URL"] == "redis://127.0.0.1:6379/12"
