"""Citus-shaped keys (tenants/distribution.py): primary keys (tenant_id, id), foreign keys composite."""

import django.db.models.deletion
from django.db import migrations, models

from tenants.distribution import tenant_foreign_key, tenant_primary_key


class Migration(migrations.Migration):
    dependencies = [
        ("episodic", "0005_citus_keys"),
        ("semantic", "0003_embedding_inline"),
        # The single-column foreign key to facts from decay anchors is in place before the keys change.
        ("consolidation", "0002_watermark_pending_xids"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="fact",
                    name="superseded_by",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="semantic.fact",
                    ),
                ),
                migrations.AlterField(
                    model_name="factchange",
                    name="fact",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="changes",
                        to="semantic.fact",
                    ),
                ),
                migrations.AlterField(
                    model_name="factchange",
                    name="related_fact",
                    field=models.ForeignKey(
                        blank=True,
                        db_constraint=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="semantic.fact",
                    ),
                ),
                migrations.AlterField(
                    model_name="factsource",
                    name="episode",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="fact_sources",
                        to="episodic.episode",
                    ),
                ),
                migrations.AlterField(
                    model_name="factsource",
                    name="fact",
                    field=models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sources",
                        to="semantic.fact",
                    ),
                ),
            ],
        ),
        tenant_primary_key("semantic_fact"),
        tenant_primary_key("semantic_factsource"),
        tenant_primary_key("semantic_factchange"),
        tenant_foreign_key("semantic_fact", "superseded_by_id", "semantic_fact"),
        tenant_foreign_key("semantic_factsource", "fact_id", "semantic_fact"),
        tenant_foreign_key("semantic_factsource", "episode_id", "episodic_episode"),
        tenant_foreign_key("semantic_factchange", "fact_id", "semantic_fact"),
        tenant_foreign_key("semantic_factchange", "related_fact_id", "semantic_fact"),
    ]
