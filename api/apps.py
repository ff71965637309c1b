from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The HTTP conventions of /v1/: authentication, problems, idempotency, pagination, throttling, the
    OpenAPI schema and the route table. No models."""

    name = "api"

    def ready(self) -> None:
        from api import schema  # noqa: F401 - registers the OpenAPI auth extension
