from django.urls import path

from router import apis

urlpatterns = [
    path("context", apis.ContextApi.as_view(), name="context"),
    path("context/<uuid:trace_id>/feedback", apis.ContextFeedbackApi.as_view(), name="context-feedback"),
    path("traces", apis.TraceListApi.as_view(), name="trace-list"),
    path("traces/<uuid:trace_id>", apis.TraceDetailApi.as_view(), name="trace-detail"),
]
