"""Export and import report progress against a total known up front (issue 34 item 11): the export
counts what it will write before it writes, names each model as it starts it (the label used to lag
one model behind), and the import reads the totals from the export's header."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command

from privacy.export import export_totals, tenant_export, tenant_import
from tests.factories.tenants import TenantFactory
from tests.privacy.test_erasure import seed_everywhere

pytestmark = pytest.mark.django_db


def test_export_knows_its_total_and_names_each_model_before_its_rows(tenant_a: Any) -> None:
    seed_everywhere(tenant_a, "u-one")
    totals = export_totals(tenant=tenant_a)
    events: list[tuple[str, int]] = []
    counts = tenant_export(tenant=tenant_a, out=io.BytesIO(), progress=lambda label, n: events.append((label, n)))
    assert totals == {k: v for k, v in counts.items() if v}
    seen: list[str] = []
    for label, n in events:
        if label not in seen:
            assert n == 0, f"{label}'s first report counted rows already: the label would lag"
            seen.append(label)
    assert sum(n for _, n in events) == sum(counts.values())
    assert [label for label in seen if totals.get(label)] == list(totals)


def test_import_reports_progress_against_the_totals_in_the_header(tenant_a: Any) -> None:
    seed_everywhere(tenant_a, "u-one")
    buffer = io.BytesIO()
    counts = tenant_export(tenant=tenant_a, out=buffer)
    events: list[tuple[str, int]] = []
    totals: list[int | None] = []
    imported = tenant_import(
        tenant=TenantFactory(slug="copy"),
        fh=io.BytesIO(buffer.getvalue()),
        progress=lambda label, n: events.append((label, n)),
        on_total=totals.append,
    )
    assert totals == [sum(counts.values())]
    assert sum(n for _, n in events) == sum(counts.values()) == sum(imported.values())


def test_the_commands_show_a_total(tenant_a: Any, tmp_path: Any) -> None:
    seed_everywhere(tenant_a, "u-one", archived=False)
    path = tmp_path / "t.jsonl.gz"
    total = sum(export_totals(tenant=tenant_a).values())
    err = io.StringIO()
    call_command("export_tenant", "--tenant", tenant_a.slug, "--out", str(path), stdout=io.StringIO(), stderr=err)
    assert f"{total}/{total}" in err.getvalue()
    TenantFactory(slug="copy")
    err = io.StringIO()
    call_command("import_tenant", "--tenant", "copy", "--in", str(path), stdout=io.StringIO(), stderr=err)
    assert f"{total}/{total}" in err.getvalue()
