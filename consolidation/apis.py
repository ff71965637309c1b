"""Ending a session (which enqueues its consolidation), and erasure and export of a subject: the GDPR
endpoints, which need an admin-scoped key."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.auth import TenantPrincipal
from api.idempotency import idempotent
from api.serializers import BodySerializer
from api.views import TenantAPIView
from consolidation import erasure, selectors
from consolidation.sessions import session_close
from core.errors import ValidationProblem
from episodic.apis import SessionOutputSerializer, session_dict
from episodic.models import Outcome

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
        created = erasure.erasure_request_create(
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
        found = selectors.erasure_request_get(tenant=self.tenant, request_id=request_id)
        return Response(ErasureRequestOutput(found).data)


class SubjectExportApi(TenantAPIView):
    required_scope = "admin"

    class OutputSerializer(serializers.Serializer):
        subject = serializers.CharField()
        exported_at = serializers.CharField()
        locations = serializers.DictField(child=serializers.ListField(child=serializers.DictField()))

    @extend_schema(responses=OutputSerializer, summary="Everything held about a subject, in every layer")
    def get(self, request: Request, subject: str) -> Response:
        return Response(erasure.subject_export(tenant=self.tenant, subject=_subject(subject)))


class SessionEndApi(TenantAPIView):
    class InputSerializer(BodySerializer):
        outcome = serializers.ChoiceField(choices=Outcome.choices, required=False, allow_null=True)
        outcome_signal = serializers.FloatField(required=False, allow_null=True)
        # When a replayed or imported session ended; the time of the request otherwise.
        ended_at = serializers.DateTimeField(required=False, allow_null=True)

    @extend_schema(request=InputSerializer, responses=SessionOutputSerializer, summary="End a session")
    @idempotent
    def post(self, request: Request, session: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ended = session_close(
            tenant=self.tenant,
            external_id=session,
            outcome=data.validated_data.get("outcome"),
            outcome_signal=data.validated_data.get("outcome_signal"),
            ended_at=data.validated_data.get("ended_at"),
        )
        return Response(session_dict(ended))
