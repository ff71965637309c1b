from django.db import migrations

from tenants.rls import enable_rls


class Migration(migrations.Migration):
    dependencies = [("tenants", "0001_initial")]

    # An operator's own memberships are readable before any tenant is in scope: that is how the
    # admin learns which tenants to scope to.
    operations = [
        enable_rls(
            "tenants_tenantmembership",
            also_visible_when="user_id = nullif(current_setting('app.operator_id', true), '')::integer",
        )
    ]
