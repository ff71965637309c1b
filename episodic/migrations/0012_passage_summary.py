"""Passages learn whether they are part of a session's summary episode, so that the router's search can
skip them: it never offers a summary episode (it offers the session's summary itself), and left in the
search they took places of its pool (on LoCoMo through the real write path, a session's summary matches
more of a question's words than any of its turns). The passages already stored are marked from their
episode's external id in one statement (a few per session); adding a column with a constant default
does not rewrite the table."""

from django.db import migrations, models

MARK = """
UPDATE episodic_passage p SET summary = true
FROM episodic_episode e
WHERE e.tenant_id = p.tenant_id AND e.id = p.episode_id AND e.external_id = 'engram:summary'
"""


class Migration(migrations.Migration):
    dependencies = [
        ("episodic", "0011_verbose_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="passage",
            name="summary",
            field=models.BooleanField(default=False),
        ),
        migrations.RunSQL(MARK, reverse_sql=migrations.RunSQL.noop),
    ]
