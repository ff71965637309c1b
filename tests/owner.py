"""Statements that need the tables' owner (VACUUM, ANALYZE, data fixed up as a migration would), run on
a connection of their own; the tests themselves run as the application role."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection

from tenants.dbroles import owner_credentials


def as_owner(*statements: str, why: str = "cannot refresh statistics") -> None:
    """Run `statements` as the owner, each committed on its own; skip the test without an owner's URL."""
    owner = owner_credentials()
    if owner is None:
        pytest.skip(f"no DATABASE_OWNER_URL: {why}")
    cfg = connection.settings_dict
    with psycopg.connect(host=cfg["HOST"], port=cfg["PORT"], dbname=cfg["NAME"], user=owner["USER"],
                         password=owner["PASSWORD"], autocommit=True) as conn:  # fmt: skip
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]
