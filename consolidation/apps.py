from django.apps import AppConfig


class ConsolidationConfig(AppConfig):
    name = "consolidation"
    default_auto_field = "django.db.models.BigAutoField"
