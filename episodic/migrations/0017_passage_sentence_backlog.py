"""Sentence vectors only for tenants that keep them (Tenant.keeps_sentence_vectors): the embedding drain
finds a tenant's embedded passages not looked at for sentences (it started exploring, or got a value
model, after they were written) by this partial index. Built concurrently, so writes go on."""

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("episodic", "0016_passage_sentences"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="passage",
            index=models.Index(
                condition=models.Q(("embedding__isnull", False), ("sentence_count__isnull", True)),
                fields=["tenant", "id"],
                name="passage_sentence_backlog",
            ),
        ),
    ]
