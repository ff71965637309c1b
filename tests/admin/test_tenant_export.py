"""An export of a tenant filed from the admin (issue 34 item 11): a Celery task taking the tenant's
id writes the file; the tenant's page links it when it is done; another tenant's exports are out of
reach."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from django.test import Client

from tests.factories.admin import Memory

pytestmark = pytest.mark.django_db

TENANTS = "/admin/tenants/tenant/"


@pytest.fixture(autouse=True)
def export_root(settings: Any, tmp_path: Any) -> Any:
    settings.EXPORT_ROOT = str(tmp_path / "exports")
    return tmp_path / "exports"


def test_the_admin_action_files_an_export_and_the_tenant_page_links_the_file(
    op_client: Client, memory_a: Memory, django_capture_on_commit_callbacks: Any
) -> None:
    tenant = memory_a.tenant
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = op_client.post(TENANTS, {"action": "export_selected", "_selected_action": [str(tenant.id)]})
    assert response.status_code == 302 and callbacks  # the task is enqueued after the commit
    page = op_client.get(f"{TENANTS}{tenant.id}/change/").content.decode()
    links = [part.split('"')[0] for part in page.split('href="')[1:] if "/exports/" in part.split('"')[0]]
    assert len(links) == 1, page
    download = op_client.get(links[0])
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment")
    body = gzip.decompress(b"".join(download.streaming_content))  # type: ignore[attr-defined]
    header = json.loads(body.splitlines()[0])
    assert header["tenant"]["slug"] == tenant.slug and header["totals"]["episodic.Episode"] == len(memory_a.episodes)


def test_another_tenants_export_is_out_of_reach(
    op_client: Client, memory_a: Memory, memory_b: Memory, django_capture_on_commit_callbacks: Any
) -> None:
    from privacy.export import export_file_name, tenant_export_file

    name = export_file_name(memory_b.tenant)
    tenant_export_file(tenant=memory_b.tenant, name=name)
    assert op_client.get(f"{TENANTS}{memory_b.tenant.id}/exports/{name}").status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        op_client.post(TENANTS, {"action": "export_selected", "_selected_action": [str(memory_b.tenant.id)]})
    from privacy.export import tenant_export_files

    assert [f.name for f in tenant_export_files(tenant=memory_b.tenant)] == [name]  # nothing filed for B
    assert op_client.get(f"{TENANTS}{memory_a.tenant.id}/exports/passwd").status_code == 404
    traversal = op_client.get(f"{TENANTS}{memory_a.tenant.id}/exports/..%2F..%2Fetc%2Fpasswd", follow=True)
    assert "root:" not in traversal.content.decode(errors="replace")
