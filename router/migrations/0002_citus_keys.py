"""Citus-shaped keys (tenants/distribution.py): primary keys (tenant_id, id), foreign keys composite."""

import django.db.models.deletion
from django.db import migrations, models

from tenants.distribution import tenant_foreign_key, tenant_primary_key


class Migration(migrations.Migration):
    dependencies = [
        ("router", "0001_initial"),
        ("tenants", "0004_citus_keys"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="contextfeedback",
                    name="trace",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="feedback",
                        to="router.contexttrace",
                    ),
                ),
            ],
        ),
        tenant_primary_key("router_contexttrace"),
        tenant_primary_key("router_contextfeedback"),
        tenant_foreign_key("router_contextfeedback", "trace_id", "router_contexttrace"),
    ]
