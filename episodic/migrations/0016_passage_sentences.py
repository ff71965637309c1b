"""The vectors of a passage's sentences (`PassageSentence`, a passage of 2 or more sentences only), and
`Passage.sentence_count`, set with the passage's embedding (null: not looked at yet). Keys led by
tenant_id, composite foreign keys and row-level security as every episodic table; vectors kept inline
(the pool reads a passage's sentences by key, the vector of each). Passages embedded before get theirs
from `manage.py backfill_passage_sentences`. Adding a nullable column rewrites nothing."""

import django.db.models.deletion
import pgvector.django.vector
from django.db import migrations, models

from core.embedding import keep_vectors_inline
from tenants.distribution import tenant_foreign_key, tenant_primary_key
from tenants.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [
        ("episodic", "0015_passage_subject_fts_gin"),
        ("tenants", "0011_tenant_trial_value_model"),
    ]

    operations = [
        migrations.AddField(
            model_name="passage",
            name="sentence_count",
            field=models.PositiveSmallIntegerField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name="PassageSentence",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("subject", models.CharField(max_length=255)),
                ("position", models.PositiveSmallIntegerField()),
                ("embedding", pgvector.django.vector.VectorField(dimensions=384)),
                (
                    "episode",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="episodic.episode",
                    ),
                ),
                (
                    "passage",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="sentences",
                        to="episodic.passage",
                    ),
                ),
                (
                    "tenant",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="tenants.tenant",
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["tenant", "episode"], name="passage_sentence_episode")],
                "constraints": [
                    models.UniqueConstraint(fields=("tenant", "passage", "position"), name="uniq_passage_sentence")
                ],
            },
        ),
        tenant_primary_key("episodic_passagesentence"),
        tenant_foreign_key("episodic_passagesentence", "passage_id", "episodic_passage"),
        tenant_foreign_key("episodic_passagesentence", "episode_id", "episodic_episode"),
        enable_rls("episodic_passagesentence"),
        keep_vectors_inline("episodic_passagesentence"),
    ]
