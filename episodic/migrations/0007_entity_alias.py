"""Entity aliases (episodic.aliases): Citus-shaped key (tenant_id, id) and row-level security."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

from tenants.distribution import tenant_primary_key
from tenants.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [
        ("episodic", "0006_passage"),
        ("tenants", "0006_idempotency_subjects_backfill"),
    ]

    operations = [
        migrations.CreateModel(
            name="EntityAlias",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("alias", models.CharField(max_length=255)),
                ("entity", models.CharField(max_length=255)),
                ("source", models.CharField(choices=[("operator", "Operator"), ("learned", "Learned")], max_length=8)),
                ("subject", models.CharField(blank=True, default="", max_length=255)),
                ("source_episode_id", models.BigIntegerField(blank=True, null=True)),
                ("created_by", models.CharField(blank=True, default="", max_length=255)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("updated_at", models.DateTimeField(default=django.utils.timezone.now)),
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
                "indexes": [
                    models.Index(fields=["tenant", "entity"], name="entityalias_entity"),
                    models.Index(fields=["tenant", "-created_at", "-id"], name="entityalias_created"),
                ],
                "constraints": [
                    models.UniqueConstraint(fields=("tenant", "alias", "subject"), name="uniq_entity_alias"),
                    models.CheckConstraint(
                        condition=models.Q(("alias", models.F("entity")), _negated=True), name="entity_alias_not_itself"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("source", "operator"), ("subject", "")),
                            models.Q(("source", "learned"), models.Q(("subject", ""), _negated=True)),
                            _connector="OR",
                        ),
                        name="entity_alias_source_subject",
                    ),
                ],
            },
        ),
        tenant_primary_key("episodic_entityalias"),
        enable_rls("episodic_entityalias"),
    ]
