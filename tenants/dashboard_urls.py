"""The memory dashboard's pages, mounted under /dashboard/ (staff only)."""

from django.urls import path

from tenants import dashboard

app_name = "dashboard"

urlpatterns = [
    path("", dashboard.dashboard_index, name="index"),
    path("<slug:tenant>/", dashboard.tenant_dashboard, name="tenant"),
    path("<slug:tenant>/subjects/<path:subject>/", dashboard.subject_dashboard, name="subject"),
]
