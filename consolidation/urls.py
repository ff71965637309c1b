from django.urls import path

from consolidation import apis

urlpatterns = [
    path("sessions/<str:session>/end", apis.SessionEndApi.as_view(), name="session-end"),
    path("subjects/<str:subject>/erasure", apis.SubjectErasureApi.as_view(), name="subject-erasure"),
    path("subjects/<str:subject>/export", apis.SubjectExportApi.as_view(), name="subject-export"),
    path("erasure-requests/<str:request_id>", apis.ErasureRequestDetailApi.as_view(), name="erasure-request-detail"),
]
