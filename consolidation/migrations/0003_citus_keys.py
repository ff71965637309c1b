"""Citus-shaped keys (tenants/distribution.py): primary keys (tenant_id, id), foreign keys composite; the
decay anchor's unique key on fact alone goes (uniq_decay_anchor_fact on (tenant, fact) stays)."""

import django.db.models.deletion
from django.db import migrations, models

from tenants.distribution import tenant_foreign_key, tenant_primary_key


class Migration(migrations.Migration):
    dependencies = [
        ("consolidation", "0002_watermark_pending_xids"),
        ("semantic", "0004_citus_keys"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="factdecayanchor",
                    name="fact",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="semantic.fact",
                    ),
                ),
            ],
        ),
        migrations.RunSQL(
            sql="ALTER TABLE consolidation_factdecayanchor DROP CONSTRAINT IF EXISTS consolidation_factdecayanchor_fact_id_key",
            reverse_sql="ALTER TABLE consolidation_factdecayanchor ADD CONSTRAINT consolidation_factdecayanchor_fact_id_key UNIQUE (fact_id)",
        ),
        tenant_primary_key("consolidation_archivemanifest"),
        tenant_primary_key("consolidation_consolidationrun"),
        tenant_primary_key("consolidation_consolidationwatermark"),
        tenant_primary_key("consolidation_erasurerequest"),
        tenant_primary_key("consolidation_factdecayanchor"),
        tenant_foreign_key("consolidation_factdecayanchor", "fact_id", "semantic_fact"),
    ]
