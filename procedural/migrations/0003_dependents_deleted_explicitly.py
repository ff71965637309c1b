"""Foreign keys between tenant tables cascade nothing on the Django side (DO_NOTHING): Django's
collector deletes and nulls dependents by foreign key id alone, which on Citus reaches every shard.
The code deletes dependents itself through `.for_tenant()`; the deferred composite foreign keys in
SQL (no action) refuse a dangling row at commit. No SQL changes here."""


import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('episodic', '0008_dependents_deleted_explicitly'),
        ('procedural', '0002_citus_keys'),
    ]

    operations = [
        migrations.AlterField(
            model_name='procedure',
            name='superseded_by',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='procedural.procedure'),
        ),
        migrations.AlterField(
            model_name='procedureevent',
            name='procedure',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='events', to='procedural.procedure'),
        ),
        migrations.AlterField(
            model_name='procedureoutcome',
            name='episode',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='episodic.episode'),
        ),
        migrations.AlterField(
            model_name='procedureoutcome',
            name='procedure',
            field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='outcomes', to='procedural.procedure'),
        ),
    ]
