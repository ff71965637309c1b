"""Erasure and export of a subject: the GDPR endpoints, which need an admin-scoped key."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.auth import TenantPrincipal
from api.idempotency import idempotent
from api.serializers import BodySerializer
from api.views import TenantAPIView
from core.errors import ValidationProblem
from privacy.erasure import subject_export
from privacy.selectors import erasure_request_get
from privacy.services import erasure_request_create

SUBJECT_MAX = 255


def _subject(value: str) -> str:
    if not value.strip() or len(value) > SUBJECT_MAX:
        raise ValidationProblem.at("/subject", f"A subject is 1 to {SUBJECT_MAX} characters.")
    return value


class ErasureRequestOutput(serializers.Serializer):
    id = serializers.UUIDField()
    subject_hash = serializers.CharField()
    status = serializers.CharField()
    requested_by = serializers.CharField()
    reason = serializers.CharField()
    deadline = serializers.DateTimeField()
    counts = serializers.DictField()
    verification = serializers.DictField()
    receipt = serializers.DictField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    completed_at = serializers.DateTimeField(allow_null=True)


class SubjectErasureApi(TenantAPIView):
    required_scope = "admin"

    class InputSerializer(BodySerializer):
        reason = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")

    @extend_schema(
        request=InputSerializer,
        responses={202: ErasureRequestOutput},
        summary="Erase everything held about a subject (asynchronous)",
    )
    @idempotent
    def post(self, request: Request, subject: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        principal = request.user
        requested_by = f"api_key:{principal.api_key.prefix}" if isinstance(principal, TenantPrincipal) else ""
        created = erasure_request_create(
            tenant=self.tenant,
            subject=_subject(subject),
            requested_by=requested_by,
            reason=data.validated_data["reason"],
        )
        return Response(ErasureRequestOutput(created).data, status=status.HTTP_202_ACCEPTED)


class ErasureRequestDetailApi(TenantAPIView):
    required_scope = "admin"

    @extend_schema(responses=ErasureRequestOutput, summary="An erasure request: status, counts, receipt")
    def get(self, request: Request, request_id: str) -> Response:
        found = erasure_request_get(tenant=self.tenant, request_id=request_id)
        return Response(ErasureRequestOutput(found).data)


class SubjectExportApi(TenantAPIView):
    required_scope = "admin"

    class OutputSerializer(serializers.Serializer):
        subject = serializers.CharField()
        exported_at = serializers.CharField()
        locations = serializers.DictField(child=serializers.ListField(child=serializers.DictField()))

    @extend_schema(responses=OutputSerializer, summary="Everything held about a subject, in every layer")
    def get(self, request: Request, subject: str) -> Response:
        return Response(subject_export(tenant=self.tenant, subject=_subject(subject)))
