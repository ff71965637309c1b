"""Erasure requests move from consolidation to privacy (issue 40, item 11): Django's state only. The
table keeps its name (consolidation_erasurerequest), its rows, its row-level security and its keys;
consolidation's 0005 deletes the model from consolidation's state after this creates it here."""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("consolidation", "0004_dependents_deleted_explicitly"),
        ("tenants", "0010_tenant_serving_value_model"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ErasureRequest',
                    fields=[
                        ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                        ('subject', models.CharField(blank=True, default='', max_length=255)),
                        ('subject_hash', models.CharField(max_length=64)),
                        ('requested_by', models.CharField(blank=True, default='', max_length=255)),
                        ('reason', models.TextField(blank=True, default='')),
                        ('status', models.CharField(choices=[('received', 'Received'), ('executing', 'Executing'), ('verifying', 'Verifying'), ('done', 'Done'), ('failed', 'Failed')], default='received', max_length=16)),
                        ('deadline', models.DateTimeField()),
                        ('counts', models.JSONField(blank=True, default=dict)),
                        ('verification', models.JSONField(blank=True, default=dict)),
                        ('receipt', models.JSONField(blank=True, default=dict)),
                        ('error', models.TextField(blank=True, default='')),
                        ('attempts', models.PositiveSmallIntegerField(default=0)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('completed_at', models.DateTimeField(blank=True, null=True)),
                        ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
                    ],
                    options={
                        'db_table': 'consolidation_erasurerequest',
                        'indexes': [models.Index(fields=['tenant', 'status', 'created_at'], name='erasure_tenant_status'), models.Index(fields=['tenant', 'subject_hash'], name='erasure_tenant_subject')],
                    },
                ),
            ],
        ),
    ]
