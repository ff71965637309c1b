from django.urls import path

from api import apis

urlpatterns = [
    path("tenant", apis.TenantDetailApi.as_view(), name="tenant-detail"),
]
