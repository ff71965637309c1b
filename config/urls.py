"""URL map: /v1/ (the API's table of contents: every route, grouped by resource, each pointing at its
app's view), the admin, the dashboard, schema and docs, probes and metrics (token or address
allow-list: core.metrics_access)."""

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

import api.apis
import consolidation.apis
import dashboard.apis
import episodic.apis
import privacy.apis
import procedural.apis
import router.apis
import semantic.apis
from api import converters  # noqa: F401  (registers extid and session_id)
from api.not_found import v1_not_found_view
from core import health, metrics_access

v1: list[URLPattern | URLResolver] = [
    # The calling key and its tenant
    path("tenant", api.apis.TenantDetailApi.as_view(), name="tenant-detail"),
    # Episodes
    path("episodes", episodic.apis.EpisodeListCreateApi.as_view(), name="episode-list"),
    path("episodes/search", episodic.apis.EpisodeSearchApi.as_view(), name="episode-search"),
    # Sessions: read and working memory (episodic), closed by consolidation
    path("sessions/<session_id:session>", episodic.apis.SessionDetailApi.as_view(), name="session-detail"),
    path("sessions/<extid:session>/scratchpad", episodic.apis.ScratchpadApi.as_view(), name="session-scratchpad"),
    path("sessions/<extid:session>/end", consolidation.apis.SessionEndApi.as_view(), name="session-end"),
    # Facts, their changes, entities and aliases
    path("facts", semantic.apis.FactListCreateApi.as_view(), name="fact-list"),
    path("facts/search", semantic.apis.FactSearchApi.as_view(), name="fact-search"),
    path("facts/<uuid:fact_id>", semantic.apis.FactDetailApi.as_view(), name="fact-detail"),
    path("facts/<uuid:fact_id>/confirm", semantic.apis.FactConfirmApi.as_view(), name="fact-confirm"),
    path("facts/<uuid:fact_id>/history", semantic.apis.FactHistoryApi.as_view(), name="fact-history"),
    path("facts/<uuid:fact_id>/review", semantic.apis.FactReviewApi.as_view(), name="fact-review"),
    path("fact-changes/<int:change_id>/revert", semantic.apis.FactChangeRevertApi.as_view(), name="fact-change-revert"),
    path("entities/aliases", semantic.apis.EntityAliasListCreateApi.as_view(), name="entity-alias-list"),
    path("entities/aliases/<int:alias_id>", semantic.apis.EntityAliasDetailApi.as_view(), name="entity-alias-detail"),
    path("entities/<extid:entity>/graph", semantic.apis.EntityGraphApi.as_view(), name="entity-graph"),
    # Procedures
    path("procedures", procedural.apis.ProcedureListApi.as_view(), name="procedure-list"),
    path("procedures/match", procedural.apis.ProcedureMatchApi.as_view(), name="procedure-match"),
    path("procedures/<int:procedure_id>", procedural.apis.ProcedureDetailApi.as_view(), name="procedure-detail"),
    path(
        "procedures/<int:procedure_id>/history", procedural.apis.ProcedureHistoryApi.as_view(), name="procedure-history"
    ),
    path(
        "procedures/<int:procedure_id>/outcomes",
        procedural.apis.ProcedureOutcomeApi.as_view(),
        name="procedure-outcomes",
    ),
    # The context and its traces
    path("context", router.apis.ContextApi.as_view(), name="context"),
    path("context/<uuid:trace_id>/feedback", router.apis.ContextFeedbackApi.as_view(), name="context-feedback"),
    path("traces", router.apis.TraceListApi.as_view(), name="trace-list"),
    path("traces/<uuid:trace_id>", router.apis.TraceDetailApi.as_view(), name="trace-detail"),
    # A subject's data: erasure and export
    path("subjects/<extid:subject>/erasure", privacy.apis.SubjectErasureApi.as_view(), name="subject-erasure"),
    path("subjects/<extid:subject>/export", privacy.apis.SubjectExportApi.as_view(), name="subject-export"),
    path(
        "erasure-requests/<str:request_id>",
        privacy.apis.ErasureRequestDetailApi.as_view(),
        name="erasure-request-detail",
    ),
    # Counts over every layer
    path("stats", dashboard.apis.StatsApi.as_view(), name="stats"),
    # Last: any other path under /v1/ is a problem+json 404 naming the closest route, in DEBUG too
    # (handler404 is not used then).
    re_path(r"^[\s\S]*$", csrf_exempt(v1_not_found_view), name="v1-not-found"),
]

urlpatterns = [
    path("v1/", include(v1)),
    # Erasure requests were consolidation's until issue 40 (item 11): old links and bookmarks still lead there.
    re_path(
        r"^admin/consolidation/erasurerequest/(?P<rest>.*)$",
        RedirectView.as_view(url="/admin/privacy/erasurerequest/%(rest)s", permanent=True, query_string=True),
    ),
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
