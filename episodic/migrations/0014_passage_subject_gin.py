"""The passages' entity and topic indexes name the subject: the router's overlap channel reads one
subject's passages that carry the query's entities or topics, and with a (tenant, entities) index it
read every passage of the subject to find them (15 ms of 10,000; docs/benchmarks/context_cpu_http_1m.md).
Built concurrently before the old ones go, so writes go on and searches always have an index."""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("episodic", "0013_passage_line"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="passage",
            index=GinIndex(fields=["tenant", "subject", "entities"], name="passage_subject_entities_gin"),
        ),
        AddIndexConcurrently(
            model_name="passage",
            index=GinIndex(fields=["tenant", "subject", "topics"], name="passage_subject_topics_gin"),
        ),
        RemoveIndexConcurrently(model_name="passage", name="passage_entities_gin"),
        RemoveIndexConcurrently(model_name="passage", name="passage_topics_gin"),
    ]
