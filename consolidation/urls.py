from django.urls import path

from api import converters  # noqa: F401  (registers extid)
from consolidation import apis

urlpatterns = [
    path("sessions/<extid:session>/end", apis.SessionEndApi.as_view(), name="session-end"),
    path("subjects/<extid:subject>/erasure", apis.SubjectErasureApi.as_view(), name="subject-erasure"),
    path("subjects/<extid:subject>/export", apis.SubjectExportApi.as_view(), name="subject-export"),
    path("erasure-requests/<str:request_id>", apis.ErasureRequestDetailApi.as_view(), name="erasure-request-detail"),
]
