"""Foreign keys between tenant tables cascade nothing on the Django side (DO_NOTHING): Django's
collector deletes and nulls dependents by foreign key id alone, which on Citus reaches every shard.
The code deletes dependents itself through `.for_tenant()`; the deferred composite foreign keys in
SQL (no action) refuse a dangling row at commit. No SQL changes here."""


import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('episodic', '0008_dependents_deleted_explicitly'),
        ('semantic', '0005_fact_change_merged'),
    ]

    operations = [
        migrations.AlterField(
            model_name='fact',
            name='superseded_by',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='semantic.fact'),
        ),
        migrations.AlterField(
            model_name='factchange',
            name='fact',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='changes', to='semantic.fact'),
        ),
        migrations.AlterField(
            model_name='factchange',
            name='related_fact',
            field=models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='semantic.fact'),
        ),
        migrations.AlterField(
            model_name='factsource',
            name='episode',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='fact_sources', to='episodic.episode'),
        ),
        migrations.AlterField(
            model_name='factsource',
            name='fact',
            field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='sources', to='semantic.fact'),
        ),
    ]
