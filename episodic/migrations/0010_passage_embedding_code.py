"""The embedding's binary code on passages (a stored generated column, `binary_quantize(embedding)`,
48 bytes) and the subject index widened to cover it, so that the vector channel's prefilter reads a
subject's codes in an index-only scan. Passages keep their vector in the row, as episodes do since
0004 (a chat turn's passage row is about 2 kB: a quarter of LoCoMo's turns and most long passages had
their vector moved to TOAST, one more lookup per row scanned or re-scored). Adding the column rewrites
the table once (an exclusive lock for as long as that takes), under the new storage, so existing rows
get their vectors back inline; the new index is built before the old one goes."""

import django.db.models.functions.comparison
import pgvector.django.bit
from django.db import migrations, models

from core.embedding import keep_vectors_inline


class Migration(migrations.Migration):
    dependencies = [
        ("episodic", "0009_passage_neighbours_by_tenant"),
    ]

    operations = [
        keep_vectors_inline("episodic_passage"),
        migrations.AddField(
            model_name="passage",
            name="embedding_code",
            field=models.GeneratedField(
                db_persist=True,
                expression=django.db.models.functions.comparison.Cast(
                    models.Func("embedding", function="binary_quantize"), pgvector.django.bit.BitField(length=384)
                ),
                output_field=pgvector.django.bit.BitField(length=384),
            ),
        ),
        migrations.AddIndex(
            model_name="passage",
            index=models.Index(
                fields=["tenant", "subject", "-occurred_at"],
                include=("embedding_code", "episode", "id"),
                name="passage_subject_codes",
            ),
        ),
        migrations.RemoveIndex(
            model_name="passage",
            name="passage_subject_time",
        ),
    ]
