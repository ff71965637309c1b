"""A fact's slot is (tenant, subject, entity, attribute): the two partial unique constraints name the
subject, so that facts of two subjects never share a slot (issue 40). The new keys are finer than the
old ones, so every stored row already satisfies them; the tenant still leads each (Citus)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('semantic', '0006_dependents_deleted_explicitly'),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name='fact',
            name='uniq_active_single_fact',
        ),
        migrations.RemoveConstraint(
            model_name='fact',
            name='uniq_live_fact_value',
        ),
        migrations.AddConstraint(
            model_name='fact',
            constraint=models.UniqueConstraint(condition=models.Q(('cardinality', 'single'), ('status', 'active')), fields=('tenant', 'subject', 'entity', 'attribute'), name='uniq_active_single_fact'),
        ),
        migrations.AddConstraint(
            model_name='fact',
            constraint=models.UniqueConstraint(condition=models.Q(('status__in', ['active', 'pending_review'])), fields=('tenant', 'subject', 'entity', 'attribute', 'value_key'), name='uniq_live_fact_value'),
        ),
    ]
