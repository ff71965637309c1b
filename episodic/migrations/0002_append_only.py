"""Episodes are append-only in the database too: an UPDATE may change only the embedding, and a
DELETE (directly, or cascaded from a session or a tenant) needs the transaction-local setting that
`episodic.models.allow_episode_deletion()` turns on for erasure and archiving. TRUNCATE is untouched
(test teardown)."""

from django.db import migrations

GUARD = """
CREATE OR REPLACE FUNCTION episodic_episode_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF coalesce(current_setting('app.allow_episode_deletion', true), '') = 'on' THEN
        RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'episodes are append-only: delete episode % only through erasure or archiving', OLD.id
            USING ERRCODE = 'raise_exception';
    END IF;
    IF (to_jsonb(NEW) - 'embedding' - 'search_vector') IS DISTINCT FROM (to_jsonb(OLD) - 'embedding' - 'search_vector') THEN
        RAISE EXCEPTION 'episodes are append-only: only the embedding of episode % may change', OLD.id
            USING ERRCODE = 'raise_exception';
    END IF;
    RETURN NEW;
END
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("episodic", "0001_initial")]

    operations = [
        migrations.RunSQL(
            sql=[
                GUARD,
                "DROP TRIGGER IF EXISTS episode_append_only ON episodic_episode",
                "CREATE TRIGGER episode_append_only BEFORE UPDATE OR DELETE ON episodic_episode "
                "FOR EACH ROW EXECUTE FUNCTION episodic_episode_append_only()",
            ],
            reverse_sql=[
                "DROP TRIGGER IF EXISTS episode_append_only ON episodic_episode",
                "DROP FUNCTION IF EXISTS episodic_episode_append_only()",
            ],
        ),
    ]
