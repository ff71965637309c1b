"""Passages store what a context reads of them that does not depend on the query: the line as rendered,
its token count and its index terms (episodic.passages.passage_line). Columns with constant defaults do
not rewrite the table; the passages already stored get their values from `manage.py
backfill_passage_lines` (until then the router computes them per request, as before)."""

import django.contrib.postgres.fields
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("episodic", "0012_passage_summary"),
    ]

    operations = [
        migrations.AddField(
            model_name="passage",
            name="line",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="passage",
            name="line_tokens",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="passage",
            name="index_terms",
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.TextField(), blank=True, null=True, size=None
            ),
        ),
    ]
