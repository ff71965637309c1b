"""GET /v1/stats: the tenant's memory figures from every layer, for agents and monitoring."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.views import TenantAPIView
from dashboard import selectors


class StatsApi(TenantAPIView):
    @extend_schema(responses=serializers.DictField(), summary="Hit rate, consolidation, backlogs and growth")
    def get(self, request: Request) -> Response:
        return Response(selectors.stats_get(tenant=self.tenant))
