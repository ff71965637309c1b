"""Lock slots per tenant: row locks in the tenant's shard instead of node-local advisory locks (tenants/locks.py)."""

import django.db.models.deletion
from django.db import migrations, models

from tenants.distribution import tenant_primary_key
from tenants.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0004_citus_keys"),
    ]

    operations = [
        migrations.CreateModel(
            name="TenantLock",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("slot", models.IntegerField()),
                (
                    "tenant",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="tenants.tenant",
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("tenant", "slot"), name="uniq_tenant_lock_slot")],
            },
        ),
        tenant_primary_key("tenants_tenantlock"),
        enable_rls("tenants_tenantlock"),
    ]
