"""Key scopes: reads need `read`, writes need `write`; a view may ask for more with `required_scope`."""

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from api.auth import TenantPrincipal


class HasKeyScope(BasePermission):
    message = "This API key does not have the scope this operation needs."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not isinstance(user, TenantPrincipal):
            return False
        needed = getattr(view, "required_scope", None) or ("read" if request.method in SAFE_METHODS else "write")
        return user.api_key.has_scope(needed)
