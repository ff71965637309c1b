"""Erasure requests are privacy's now (privacy/migrations/0001_initial.py): gone from consolidation's
state, the table stays as it is. No SQL."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("consolidation", "0004_dependents_deleted_explicitly"),
        ("privacy", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[migrations.DeleteModel(name="ErasureRequest")]),
    ]
