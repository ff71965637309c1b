"""Citus-shaped keys (tenants/distribution.py): primary keys (tenant_id, id), foreign keys composite."""

import django.db.models.deletion
from django.db import migrations, models

from tenants.distribution import tenant_foreign_key, tenant_primary_key


class Migration(migrations.Migration):
    dependencies = [
        ("episodic", "0005_citus_keys"),
        ("procedural", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="procedure",
                    name="superseded_by",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="procedural.procedure",
                    ),
                ),
                migrations.AlterField(
                    model_name="procedureevent",
                    name="procedure",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="events",
                        to="procedural.procedure",
                    ),
                ),
                migrations.AlterField(
                    model_name="procedureoutcome",
                    name="episode",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="episodic.episode",
                    ),
                ),
                migrations.AlterField(
                    model_name="procedureoutcome",
                    name="procedure",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="outcomes",
                        to="procedural.procedure",
                    ),
                ),
            ],
        ),
        tenant_primary_key("procedural_procedure"),
        tenant_primary_key("procedural_procedureevent"),
        tenant_primary_key("procedural_procedureoutcome"),
        tenant_foreign_key("procedural_procedure", "superseded_by_id", "procedural_procedure"),
        tenant_foreign_key("procedural_procedureevent", "procedure_id", "procedural_procedure"),
        tenant_foreign_key("procedural_procedureoutcome", "procedure_id", "procedural_procedure"),
        tenant_foreign_key("procedural_procedureoutcome", "episode_id", "episodic_episode"),
    ]
