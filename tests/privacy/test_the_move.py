"""Erasure and export are the `privacy` app's (issue 40, item 11): consolidation holds neither, the
app imports nothing from above and nothing inside a function, and the move changed Django's state
only: the table, its row-level security, the operators' permissions, the beat rows and the old admin
addresses all still hold."""

from __future__ import annotations

import ast
import gzip
import importlib
import io
import json
import tomllib
from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from config.celery import app as celery_app
from privacy.export import tenant_export, tenant_import
from privacy.models import ErasureRequest
from privacy.services import erasure_request_create
from tenants.scope import tenant_scope
from tests.factories.tenants import TenantFactory

ROOT = Path(__file__).resolve().parents[2]
MOVE = importlib.import_module("privacy.migrations.0002_moved_from_consolidation")


def test_consolidation_holds_no_erasure_or_export() -> None:
    assert not (ROOT / "consolidation" / "erasure.py").exists()
    assert not (ROOT / "consolidation" / "export.py").exists()
    assert {m.__name__ for m in apps.get_app_config("consolidation").get_models()} == {
        "ConsolidationRun",
        "ConsolidationWatermark",
        "FactDecayAnchor",
        "ArchiveManifest",
    }
    commands = {p.stem for p in (ROOT / "consolidation" / "management" / "commands").glob("*.py")}
    assert not commands & {"export_tenant", "import_tenant"}


def test_the_privacy_app_is_a_layer_that_import_linter_holds() -> None:
    linter = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert "privacy" in linter["root_packages"]
    layers = next(c for c in linter["contracts"] if c["type"] == "layers" and "containers" not in c)["layers"]
    floors = [[name.strip() for name in floor.split("|")] for floor in layers]
    privacy = next(i for i, floor in enumerate(floors) if "privacy" in floor)
    consolidation = next(i for i, floor in enumerate(floors) if "consolidation" in floor)
    dashboard = next(i for i, floor in enumerate(floors) if "dashboard" in floor)
    assert dashboard < privacy < consolidation  # listed top first
    inner = next(c for c in linter["contracts"] if c.get("containers") == ["privacy"])
    assert inner["type"] == "layers"


def test_privacy_imports_only_at_the_top_of_its_modules() -> None:
    """A cycle held open by an import inside a function was how erasure reached its task; the app's
    layers contract refuses the cycle, and this refuses the dodge."""
    inside = []
    for path in (ROOT / "privacy").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                inside += [
                    f"{path.relative_to(ROOT)}:{n.lineno}"
                    for n in ast.walk(node)
                    if isinstance(n, ast.Import | ast.ImportFrom)
                ]
    assert inside == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("app", "name"), [("privacy", "0001_initial"), ("consolidation", "0005_erasure_moved_to_privacy")]
)
def test_the_move_is_state_only(app: str, name: str) -> None:
    out = io.StringIO()
    call_command("sqlmigrate", app, name, stdout=out)
    statements = [
        line
        for line in out.getvalue().splitlines()
        if line.strip() and not line.startswith("--") and line.strip() not in {"BEGIN;", "COMMIT;"}
    ]
    assert statements == []


@pytest.mark.django_db
def test_the_erasure_requests_keep_their_table_and_its_row_level_security() -> None:
    model = apps.get_model("privacy", "ErasureRequest")
    assert model._meta.db_table == "consolidation_erasurerequest"
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
                      (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND c.relname LIKE %s""",
            ["%erasurerequest"],
        )
        assert cursor.fetchall() == [("consolidation_erasurerequest", True, True, 1)]
    assert ContentType.objects.get_for_model(model).app_label == "privacy"


OLD, NEW = "consolidation.tasks.process_erasure_requests", "privacy.tasks.process_erasure_requests"


@pytest.mark.django_db
@pytest.mark.parametrize("privacy_type_exists", [False, True])
def test_operators_keep_their_erasure_permissions_and_beat_rows_their_task(privacy_type_exists: bool) -> None:
    """The data migration beside the state move: the content type (and with it every operator's
    permission on erasure requests) and the periodic tasks stored under the old task paths."""
    ContentType.objects.filter(model="erasurerequest").delete()
    old_type = ContentType.objects.create(app_label="consolidation", model="erasurerequest")
    granted = Permission.objects.create(content_type=old_type, codename="add_erasurerequest", name="Can add")
    if privacy_type_exists:  # post_migrate of an earlier run created it already
        new_type = ContentType.objects.create(app_label="privacy", model="erasurerequest")
        Permission.objects.create(content_type=new_type, codename="add_erasurerequest", name="Can add")
    user = get_user_model().objects.create_user("op", password="pw-op-1", is_staff=True)  # noqa: S106
    user.user_permissions.add(granted)
    every = IntervalSchedule.objects.create(every=60, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(name="engram: erasure requests", task=OLD, interval=every)

    MOVE.forwards(apps, None)

    user = get_user_model().objects.get(pk=user.pk)
    assert user.has_perm("privacy.add_erasurerequest")
    assert list(ContentType.objects.filter(model="erasurerequest").values_list("app_label", flat=True)) == ["privacy"]
    assert PeriodicTask.objects.get(name="engram: erasure requests").task == NEW
    MOVE.backwards(apps, None)
    assert PeriodicTask.objects.get(name="engram: erasure requests").task == OLD


def test_tasks_queued_under_the_old_names_still_run() -> None:
    for name in ("process_erasure_requests", "execute_erasure", "export_tenant_file"):
        assert celery_app.tasks[f"consolidation.tasks.{name}"].run is celery_app.tasks[f"privacy.tasks.{name}"].run
        routes = celery_app.conf.task_routes
        if "erasure" in name:
            assert routes[f"privacy.tasks.{name}"] == {"queue": "erasure"}


@pytest.mark.django_db
def test_the_old_admin_addresses_lead_to_the_new_ones(admin_client: Client) -> None:
    response = admin_client.get("/admin/consolidation/erasurerequest/add/?x=1")
    assert response.status_code == 301
    assert response["Location"] == "/admin/privacy/erasurerequest/add/?x=1"
    assert admin_client.get(response["Location"]).status_code == 200


@pytest.mark.django_db
def test_an_export_written_before_the_move_imports_its_erasure_requests(tenant_a) -> None:
    erasure_request_create(tenant=tenant_a, subject="gone")
    buffer = io.BytesIO()
    tenant_export(tenant=tenant_a, out=buffer)
    lines = [json.loads(line) for line in gzip.decompress(buffer.getvalue()).splitlines()]
    for line in lines:
        if line.get("model") == "privacy.ErasureRequest":
            line["model"] = "consolidation.ErasureRequest"
    old = io.BytesIO(gzip.compress(b"\n".join(json.dumps(line).encode() for line in lines)))
    target = TenantFactory()
    counts = tenant_import(tenant=target, fh=old)
    assert counts["privacy.ErasureRequest"] == 1
    with tenant_scope(target):
        assert ErasureRequest.objects.count() == 1
