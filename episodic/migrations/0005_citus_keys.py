"""Citus-shaped keys (tenants/distribution.py): primary keys (tenant_id, id), the session foreign key
composite. The append-only trigger goes: Citus refuses triggers on distributed tables; the guard is now
the application role's privileges (tenants/dbroles.py) and the eraser role that
`allow_episode_deletion()` switches to."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

from tenants.distribution import tenant_foreign_key, tenant_primary_key

_append_only = importlib.import_module("episodic.migrations.0002_append_only")


class Migration(migrations.Migration):
    dependencies = [
        ("episodic", "0004_embedding_inline"),
        ("tenants", "0004_citus_keys"),
        # The single-column foreign keys to episodes are all in place before the keys change.
        ("semantic", "0003_embedding_inline"),
        ("procedural", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(
            sql=[
                "DROP TRIGGER IF EXISTS episode_append_only ON episodic_episode",
                "DROP FUNCTION IF EXISTS episodic_episode_append_only()",
            ],
            reverse_sql=_append_only.Migration.operations[0].sql,
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="episode",
                    name="session",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="episodes",
                        to="episodic.session",
                    ),
                ),
            ],
        ),
        tenant_primary_key("episodic_session"),
        tenant_primary_key("episodic_episode"),
        tenant_foreign_key("episodic_episode", "session_id", "episodic_session"),
    ]
