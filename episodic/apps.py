from django.apps import AppConfig


class EpisodicConfig(AppConfig):
    name = "episodic"
    default_auto_field = "django.db.models.BigAutoField"
