"""The neighbour-passage lookup names its tenant (one shard on Citus): its index is led by tenant_id.
Built concurrently before the old one goes, so writes go on and the lookup always has an index."""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("episodic", "0008_dependents_deleted_explicitly"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="passage",
            index=models.Index(
                fields=["tenant", "session", "occurred_at", "episode", "position"], name="passage_tenant_session_seq"
            ),
        ),
        RemoveIndexConcurrently(model_name="passage", name="passage_session_seq"),
    ]
