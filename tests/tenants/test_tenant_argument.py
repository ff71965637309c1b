"""Commands that act on one tenant name it by slug or id; a tenant that does not exist is said so,
with the command that creates it."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_importing_into_a_tenant_that_does_not_exist_says_how_to_create_it(tmp_path) -> None:
    with pytest.raises(CommandError) as raised:
        call_command("import_tenant", "--tenant", "acme-copy", "--in", str(tmp_path / "export.jsonl.gz"))
    message = str(raised.value)
    assert "No tenant 'acme-copy'" in message
    assert 'manage.py create_tenant "<name>" --slug acme-copy' in message


def test_a_tenant_named_by_an_unknown_id_is_told_to_create_one_by_slug() -> None:
    with pytest.raises(CommandError) as raised:
        call_command("export_tenant", "--tenant", "00000000-0000-0000-0000-000000000001", "--out", "/dev/null")
    message = str(raised.value)
    assert "manage.py create_tenant" in message and "--slug 0000" not in message
