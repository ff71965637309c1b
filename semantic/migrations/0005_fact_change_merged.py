"""FactChange kind `merged`: a fact moved to the entity its name is an alias of (semantic.aliases)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("semantic", "0004_citus_keys"),
    ]

    operations = [
        migrations.AlterField(
            model_name="factchange",
            name="kind",
            field=models.CharField(
                choices=[
                    ("created", "Created"),
                    ("confirmed", "Confirmed"),
                    ("superseded", "Superseded"),
                    ("retracted", "Retracted"),
                    ("expired", "Expired"),
                    ("edited", "Edited"),
                    ("decayed", "Decayed"),
                    ("review_approved", "Review Approved"),
                    ("review_rejected", "Review Rejected"),
                    ("reverted", "Reverted"),
                    ("merged", "Merged"),
                ],
                max_length=20,
            ),
        ),
    ]
