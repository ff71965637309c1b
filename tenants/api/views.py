"""The base of every /v1/ view."""

from rest_framework.views import APIView

from tenants.auth import request_tenant
from tenants.models import Tenant


class TenantAPIView(APIView):
    """An APIView whose request has been authenticated for one tenant, whose scope is active."""

    @property
    def tenant(self) -> Tenant:
        return request_tenant(self.request)
