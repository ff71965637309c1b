from django.db import migrations

from core.embedding import keep_vectors_inline


class Migration(migrations.Migration):
    dependencies = [("episodic", "0003_episode_session_seq")]

    operations = [keep_vectors_inline("episodic_episode")]
