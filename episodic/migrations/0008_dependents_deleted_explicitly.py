"""Foreign keys between tenant tables cascade nothing on the Django side (DO_NOTHING): Django's
collector deletes and nulls dependents by foreign key id alone, which on Citus reaches every shard.
The code deletes dependents itself through `.for_tenant()`; the deferred composite foreign keys in
SQL (no action) refuse a dangling row at commit. No SQL changes here."""


import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('episodic', '0007_entity_alias'),
    ]

    operations = [
        migrations.AlterField(
            model_name='episode',
            name='session',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='episodes', to='episodic.session'),
        ),
        migrations.AlterField(
            model_name='passage',
            name='episode',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='passages', to='episodic.episode'),
        ),
        migrations.AlterField(
            model_name='passage',
            name='session',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='episodic.session'),
        ),
    ]
