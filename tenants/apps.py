from django.apps import AppConfig


class TenantsConfig(AppConfig):
    """The platform app: tenants, API keys, tenant scope and row-level security."""

    name = "tenants"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tenants import dbroles

        dbroles.connect_signals()
        from tenants.admin import restrict_platform_admin

        # Admin modules were loaded by django.contrib.admin's ready(), listed before this app.
        restrict_platform_admin()
