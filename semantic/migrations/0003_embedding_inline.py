from django.db import migrations

from core.embedding import keep_vectors_inline


class Migration(migrations.Migration):
    dependencies = [("semantic", "0002_change_observed_at")]

    operations = [keep_vectors_inline("semantic_fact")]
