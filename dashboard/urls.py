"""The memory dashboard's pages, mounted under /dashboard/ (staff only)."""

from django.urls import path

from dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("", views.dashboard_index, name="index"),
    path("<slug:tenant>/", views.tenant_dashboard, name="tenant"),
    path("<slug:tenant>/subjects/<path:subject>/", views.subject_dashboard, name="subject"),
]
