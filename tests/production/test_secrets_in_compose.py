"""Secrets of the compose deployment: both Redis instances ask for a password that every URL to them
carries, and the database's first-start script takes any application password, quotes included."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent.parent
APP_SERVICES = ("migrate", "web", "worker", "beat")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def _words(service: dict[str, Any]) -> list[str]:
    command = service.get("command") or ""
    return list(command) if isinstance(command, list) else shlex.split(str(command))


@pytest.mark.parametrize("instance", ["redis", "cache"])
def test_each_redis_instance_requires_the_password_its_urls_carry(compose: dict[str, Any], instance: str) -> None:
    service = compose["services"][instance]
    words = _words(service)
    assert "--requirepass" in words, f"{instance} accepts anyone on the network"
    password = words[words.index("--requirepass") + 1]
    assert re.fullmatch(r"\$\{[A-Z_]+:\?[^}]+\}", password), "a required variable, never a literal"
    health = " ".join(service["healthcheck"]["test"])
    assert "REDISCLI_AUTH" in health or "-a" in health.split()
    for name in APP_SERVICES:
        env = compose["services"][name].get("environment") or {}
        urls = [v for v in env.values() if isinstance(v, str) and f"@{instance}:" in v]
        bare = [v for v in env.values() if isinstance(v, str) and v.startswith(f"redis://{instance}:")]
        assert not bare, (name, bare)
        for url in urls:
            assert url.startswith(f"redis://:{password}@{instance}:"), (name, url)


def test_the_first_start_script_takes_a_password_with_quotes(tmp_path: Path) -> None:
    """Runs docker/postgres-init.sh with a psql that forwards to the real one inside a transaction that
    is rolled back, under a role name of its own (the real one exists on this server)."""
    role = f"zz_init_{uuid.uuid4().hex[:8]}"
    owner_url = os.environ.get("DATABASE_OWNER_URL", "")
    if not owner_url:
        pytest.skip("needs DATABASE_OWNER_URL")
    fake = tmp_path / "psql"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        'args=(); while [ $# -gt 0 ]; do case "$1" in --username|--dbname) shift 2;; *) args+=("$1"); shift;; esac; done\n'
        f'{{ echo "BEGIN;"; sed "s/engram_app/{role}/g; s/engram_worker/{role}_w/g"; echo "ROLLBACK;"; }}'
        ' | /usr/bin/psql "$OWNER_URL" "${args[@]}"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {
        **os.environ,
        "PATH": f"{tmp_path}:{os.environ['PATH']}",
        "OWNER_URL": owner_url,
        "POSTGRES_USER": "ignored",
        "POSTGRES_DB": settings.DATABASES["default"]["NAME"],
        "ENGRAM_APP_DB_PASSWORD": 'it\'s; DROP ROLE x; -- "quoted" $dollar',
        "ENGRAM_WORKER_DB_PASSWORD": 'worker\'s; DROP ROLE y; -- "q" $d',
    }
    done = subprocess.run(  # noqa: S603 - our own script, fixed arguments
        [shutil.which("bash") or "/bin/bash", str(ROOT / "docker" / "postgres-init.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("CREATE ROLE") == 2, done.stdout
