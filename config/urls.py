"""URL map: /v1/ (each app's urls), the admin, the dashboard, schema and docs, probes and metrics
(token or address allow-list: core.metrics_access)."""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from api.problems import not_found_view
from core import health, metrics_access

v1: list[URLPattern | URLResolver] = [
    path("", include("api.urls")),
    path("", include("episodic.urls")),
    path("", include("semantic.urls")),
    path("", include("procedural.urls")),
    path("", include("router.urls")),
    path("", include("consolidation.urls")),
    path("", include("dashboard.api_urls")),
    # Last: any other path under /v1/ is a problem+json 404, in DEBUG too (handler404 is not used then).
    re_path(r"^[\s\S]*$", csrf_exempt(not_found_view), name="v1-not-found"),
]

urlpatterns = [
    path("v1/", include(v1)),
    path("admin/", admin.site.urls),
    path("dashboard/", include("dashboard.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics_access.metrics, name="prometheus-django-metrics"),
]

handler400 = "api.problems.bad_request_view"
handler404 = "api.problems.not_found_view"
handler500 = "api.problems.server_error_view"
