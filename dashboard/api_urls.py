"""The dashboard's part of /v1/: GET /v1/stats."""

from django.urls import path

from dashboard import apis

urlpatterns = [
    path("stats", apis.StatsApi.as_view(), name="stats"),
]
