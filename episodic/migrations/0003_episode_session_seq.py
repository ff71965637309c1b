import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    # Built concurrently: the episode table is the largest, and writes must not wait for the build.
    atomic = False

    dependencies = [
        ("episodic", "0002_append_only"),
        ("tenants", "0003_search_support"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="episode",
            index=models.Index(fields=["session", "occurred_at", "id"], name="episode_session_seq"),
        ),
        # The new index leads with session_id, so the foreign key's own index is redundant.
        migrations.AlterField(
            model_name="episode",
            name="session",
            field=models.ForeignKey(
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="episodes",
                to="episodic.session",
            ),
        ),
    ]
