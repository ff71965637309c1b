"""Citus-shaped keys for the one distributed table of this app (see tenants/distribution.py). The
tenant table itself, API keys and memberships stay global: reference tables."""

from django.db import migrations

from tenants.distribution import tenant_primary_key


class Migration(migrations.Migration):
    dependencies = [("tenants", "0003_search_support")]

    operations = [tenant_primary_key("tenants_idempotencyrecord")]
