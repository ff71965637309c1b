"""Records stored before every idempotent answer listed its subjects: add each `subject` and `entity`
string found anywhere in the stored answer, so that erasure finds them too. Runs tenant by tenant,
because the table forces row-level security even on its owner."""

from django.db import migrations

BACKFILL = """
DO $$
DECLARE t uuid;
BEGIN
  FOR t IN SELECT id FROM tenants_tenant LOOP
    PERFORM set_config('app.tenant_id', t::text, true);
    UPDATE tenants_idempotencyrecord r
       SET subjects = ARRAY(
         SELECT DISTINCT s FROM (
           SELECT unnest(r.subjects) AS s
           UNION
           SELECT v #>> '{}' FROM jsonb_path_query(
             r.response_body, 'lax $.**.subject ? (@.type() == "string" && @ != "")'
           ) AS v
           UNION
           SELECT v #>> '{}' FROM jsonb_path_query(
             r.response_body, 'lax $.**.entity ? (@.type() == "string" && @ != "")'
           ) AS v
         ) found ORDER BY s
       )
     WHERE r.tenant_id = t;
  END LOOP;
  PERFORM set_config('app.tenant_id', '', true);
END $$;
"""


class Migration(migrations.Migration):
    dependencies = [("tenants", "0005_tenant_lock")]

    operations = [migrations.RunSQL(BACKFILL, reverse_sql=migrations.RunSQL.noop)]
