from django.contrib.postgres.operations import BtreeGinExtension
from django.db import migrations

from tenants.rls import mark_leakproof


class Migration(migrations.Migration):
    dependencies = [("tenants", "0002_membership_rls")]

    # btree_gin lets GIN indexes lead with tenant_id like every other index.
    operations = [
        BtreeGinExtension(),
        mark_leakproof(
            "arrayoverlap(anyarray, anyarray)",
            "arraycontains(anyarray, anyarray)",
            "ts_match_vq(tsvector, tsquery)",
        ),
    ]
