"""Passages (episodic.passages): Citus-shaped from the start, keys led by tenant_id, composite foreign keys,
row-level security. Existing episodes get theirs from `manage.py backfill_passages`."""

import django.contrib.postgres.fields
import django.contrib.postgres.indexes
import django.contrib.postgres.search
import django.db.models.deletion
import pgvector.django.indexes
import pgvector.django.vector
from django.db import migrations, models

from tenants.distribution import tenant_foreign_key, tenant_primary_key
from tenants.rls import enable_rls


class Migration(migrations.Migration):

    dependencies = [
        ('episodic', '0005_citus_keys'),
        ('tenants', '0006_idempotency_subjects_backfill'),
    ]

    operations = [
        migrations.CreateModel(
            name='Passage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('subject', models.CharField(max_length=255)),
                ('occurred_at', models.DateTimeField()),
                ('position', models.PositiveIntegerField()),
                ('char_start', models.PositiveIntegerField()),
                ('char_end', models.PositiveIntegerField()),
                ('last', models.BooleanField(default=True)),
                ('content', models.TextField(blank=True, default='')),
                ('token_count', models.PositiveIntegerField(default=0)),
                ('entities', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=200), blank=True, default=list, size=None)),
                ('topics', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=100), blank=True, default=list, size=None)),
                ('embedding', pgvector.django.vector.VectorField(blank=True, dimensions=384, null=True)),
                ('search_vector', models.GeneratedField(db_persist=True, expression=django.contrib.postgres.search.SearchVector('content', config='english'), output_field=django.contrib.postgres.search.SearchVectorField())),
                ('episode', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='passages', to='episodic.episode')),
                ('session', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='episodic.session')),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'indexes': [models.Index(fields=['tenant', 'subject', '-occurred_at'], name='passage_subject_time'), models.Index(fields=['session', 'occurred_at', 'episode', 'position'], name='passage_session_seq'), django.contrib.postgres.indexes.GinIndex(fields=['tenant', 'entities'], name='passage_entities_gin'), django.contrib.postgres.indexes.GinIndex(fields=['tenant', 'topics'], name='passage_topics_gin'), django.contrib.postgres.indexes.GinIndex(fields=['tenant', 'search_vector'], name='passage_fts_gin'), models.Index(condition=models.Q(('embedding__isnull', True)), fields=['tenant', 'id'], name='passage_embedding_backlog'), pgvector.django.indexes.HnswIndex(ef_construction=64, fields=['embedding'], m=16, name='passage_embedding_hnsw', opclasses=['vector_cosine_ops'])],
                'constraints': [models.UniqueConstraint(fields=('tenant', 'episode', 'position'), name='uniq_passage_position')],
            },
        ),
        tenant_primary_key("episodic_passage"),
        tenant_foreign_key("episodic_passage", "episode_id", "episodic_episode"),
        tenant_foreign_key("episodic_passage", "session_id", "episodic_session"),
        enable_rls("episodic_passage"),
    ]
