"""The caller's own tenant: who am I, with which scopes."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.auth import TenantPrincipal
from api.views import TenantAPIView


class TenantDetailApi(TenantAPIView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.UUIDField()
        name = serializers.CharField()
        slug = serializers.CharField()
        key_prefix = serializers.CharField()
        scopes = serializers.ListField(child=serializers.CharField())
        settings = serializers.DictField()

    @extend_schema(responses=OutputSerializer, summary="The tenant of the calling API key")
    def get(self, request: Request) -> Response:
        principal = request.user
        assert isinstance(principal, TenantPrincipal)
        from dataclasses import asdict

        data = {
            "id": self.tenant.id,
            "name": self.tenant.name,
            "slug": self.tenant.slug,
            "key_prefix": principal.api_key.prefix,
            "scopes": principal.api_key.scopes,
            "settings": asdict(self.tenant.config),
        }
        return Response(self.OutputSerializer(data).data)
