from django.urls import path

from tenants import apis

urlpatterns = [
    path("tenant", apis.TenantDetailApi.as_view(), name="tenant-detail"),
]
