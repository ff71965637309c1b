from django.urls import path

from consolidation import apis
from tenants.api import converters  # noqa: F401  (registers extid)

urlpatterns = [
    path("sessions/<extid:session>/end", apis.SessionEndApi.as_view(), name="session-end"),
    path("subjects/<extid:subject>/erasure", apis.SubjectErasureApi.as_view(), name="subject-erasure"),
    path("subjects/<extid:subject>/export", apis.SubjectExportApi.as_view(), name="subject-export"),
    path("erasure-requests/<str:request_id>", apis.ErasureRequestDetailApi.as_view(), name="erasure-request-detail"),
]
