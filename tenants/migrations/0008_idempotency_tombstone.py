"""Tombstones of erased idempotency records: a replay of an erased request is refused (tenants/api/idempotency.py)."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from tenants.distribution import tenant_primary_key
from tenants.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0007_tenant_has_entity_aliases"),
    ]

    operations = [
        migrations.CreateModel(
            name="IdempotencyTombstone",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("key_hash", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
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
                "indexes": [models.Index(fields=["tenant", "created_at"], name="idem_tomb_tenant_created")],
                "constraints": [
                    models.UniqueConstraint(fields=("tenant", "key_hash"), name="uniq_idempotency_tombstone")
                ],
            },
        ),
        tenant_primary_key("tenants_idempotencytombstone"),
        enable_rls("tenants_idempotencytombstone"),
    ]
