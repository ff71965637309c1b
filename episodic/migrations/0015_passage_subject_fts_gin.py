"""The passages' full-text index names the subject: the router's text channel reads one subject's
passages that match the query, and with a (tenant, search_vector) index the planner either read the
tenant's matches of every subject or walked the subject's passages newest first, testing each
(docs/benchmarks/context_cpu_http_1m.md). A GIN index serves any subset of its columns, so searches
across the tenant keep an index. Built concurrently before the old one goes, so writes go on and
searches always have an index."""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("episodic", "0014_passage_subject_gin"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="passage",
            index=GinIndex(fields=["tenant", "subject", "search_vector"], name="passage_subject_fts_gin"),
        ),
        RemoveIndexConcurrently(model_name="passage", name="passage_fts_gin"),
    ]
