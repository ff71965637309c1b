"""Who is believed about the scheme and the client's address: only the configured proxies
(ENGRAM_TRUSTED_PROXIES), never any caller. gunicorn decides the scheme (wsgi.url_scheme) from them;
Django reads no forwarded header of its own for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

PROBE = """
import django
django.setup()
from django.test import RequestFactory
request = RequestFactory().get("/healthz", HTTP_X_FORWARDED_PROTO="https", REMOTE_ADDR="203.0.113.7")
print("secure" if request.is_secure() else "plain")
"""


def test_production_believes_no_caller_about_https() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY="x" * 50,
        DATABASE_URL="postgres://app:pw@127.0.0.1:5432/engram",
        REDIS_URL="redis://127.0.0.1:6379/15",
        DJANGO_ALLOWED_HOSTS="testserver",
    )
    out = subprocess.run(  # noqa: S603 - our own interpreter, fixed arguments
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "plain"


def _gunicorn_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    from gunicorn.config import Config

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    cfg = Config()
    namespace: dict[str, Any] = {"__file__": str(ROOT / "config" / "gunicorn_conf.py")}
    exec(compile((ROOT / "config" / "gunicorn_conf.py").read_text(), "gunicorn_conf.py", "exec"), namespace)  # noqa: S102
    for key, value in namespace.items():
        if key in cfg.settings:
            cfg.set(key, value)
    return cfg


def test_gunicorn_believes_the_scheme_only_from_the_trusted_proxies(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ENGRAM_TRUSTED_PROXIES", raising=False)
    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    assert _gunicorn_settings(monkeypatch, tmp_path).forwarded_allow_ips == []
    monkeypatch.setenv("ENGRAM_TRUSTED_PROXIES", "10.9.0.0/16,192.0.2.10")
    assert _gunicorn_settings(monkeypatch, tmp_path).forwarded_allow_ips == ["10.9.0.0/16", "192.0.2.10"]
