from django.apps import AppConfig


class ProceduralConfig(AppConfig):
    name = "procedural"
    default_auto_field = "django.db.models.BigAutoField"
