from django.apps import AppConfig


class SemanticConfig(AppConfig):
    name = "semantic"
    default_auto_field = "django.db.models.BigAutoField"
