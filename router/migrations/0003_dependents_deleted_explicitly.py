"""Foreign keys between tenant tables cascade nothing on the Django side (DO_NOTHING): Django's
collector deletes and nulls dependents by foreign key id alone, which on Citus reaches every shard.
The code deletes dependents itself through `.for_tenant()`; the deferred composite foreign keys in
SQL (no action) refuse a dangling row at commit. No SQL changes here."""


import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('router', '0002_citus_keys'),
    ]

    operations = [
        migrations.AlterField(
            model_name='contextfeedback',
            name='trace',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='feedback', to='router.contexttrace'),
        ),
    ]
