from django.apps import AppConfig


class RouterConfig(AppConfig):
    name = "router"
    default_auto_field = "django.db.models.BigAutoField"
