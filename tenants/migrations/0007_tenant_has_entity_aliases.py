"""Tenant.has_entity_aliases: searches of a tenant that never had an entity alias skip the lookup."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0006_idempotency_subjects_backfill"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="has_entity_aliases",
            field=models.BooleanField(default=False),
        ),
    ]
