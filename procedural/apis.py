"""/v1/procedures: the rules, their versions and decisions, matching, and outcomes."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.auth import TenantPrincipal
from api.idempotency import idempotency_subjects, idempotent
from api.pagination import CreatedCursorPagination
from api.serializers import BodySerializer, IdField, StrictSerializer
from api.views import TenantAPIView
from procedural import selectors, services
from procedural.confidence import wilson_interval
from procedural.models import Procedure, ProcedureSource, ProcedureStatus


def _actor(request: Request) -> str:
    principal = request.user
    return f"api_key:{principal.api_key.prefix}" if isinstance(principal, TenantPrincipal) else "unknown"


class StatisticsSerializer(serializers.Serializer):
    applications = serializers.IntegerField()
    successes = serializers.IntegerField()
    failures = serializers.IntegerField()
    not_applied = serializers.IntegerField()
    success_rate = serializers.FloatField(allow_null=True)
    success_rate_interval = serializers.ListField(child=serializers.FloatField())
    confidence = serializers.FloatField()
    last_applied_at = serializers.DateTimeField(allow_null=True)


class ProcedureOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    lineage = serializers.UUIDField()
    version = serializers.IntegerField()
    is_current = serializers.BooleanField()
    superseded_by = serializers.IntegerField(source="superseded_by_id", allow_null=True)
    agent = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    trigger = serializers.SerializerMethodField()
    behaviour = serializers.CharField()
    steps = serializers.ListField(child=serializers.CharField())
    source = serializers.CharField()  # type: ignore[assignment]  # a field named like Field.source
    status = serializers.CharField()
    confidence = serializers.FloatField()
    statistics = serializers.SerializerMethodField()
    created_by = serializers.CharField()
    evidence = serializers.DictField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    status_changed_at = serializers.DateTimeField()

    def get_trigger(self, procedure: Procedure) -> dict[str, Any]:
        return services.trigger_document(procedure)

    @extend_schema(responses=StatisticsSerializer)
    def get_statistics(self, procedure: Procedure) -> dict[str, Any]:
        judged = procedure.successes + procedure.failures
        low, high = wilson_interval(procedure.successes, judged)
        return {
            "applications": procedure.applications,
            "successes": procedure.successes,
            "failures": procedure.failures,
            "not_applied": procedure.not_applied,
            "success_rate": round(procedure.successes / judged, 4) if judged else None,
            "success_rate_interval": [round(low, 4), round(high, 4)],
            "confidence": procedure.confidence,
            "last_applied_at": procedure.last_applied_at,
        }


class EventOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    procedure_id = serializers.IntegerField()
    kind = serializers.CharField()
    actor = serializers.CharField()
    reason = serializers.CharField()
    figures = serializers.DictField()
    created_at = serializers.DateTimeField()


class ProcedurePagination(CreatedCursorPagination):
    ordering = ("-created_at", "-id")


class ProcedureListApi(TenantAPIView):
    class FilterSerializer(StrictSerializer):
        class Meta:
            ref_name = "ProcedureListFilter"

        status = serializers.ChoiceField(choices=ProcedureStatus.choices, required=False)
        source = serializers.ChoiceField(choices=ProcedureSource.choices, required=False)  # type: ignore[assignment]
        agent = IdField(required=False, allow_blank=True)
        lineage = serializers.UUIDField(required=False)
        all_versions = serializers.BooleanField(required=False, default=False)
        cursor = serializers.CharField(required=False)
        limit = serializers.IntegerField(required=False, min_value=1, max_value=500)

    class InputSerializer(BodySerializer):
        class Meta:
            ref_name = "ProcedureCreateInput"

        name = serializers.CharField(max_length=services.MAX_NAME_CHARS)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        agent = IdField(required=False, allow_blank=True, default="")
        trigger = serializers.JSONField()
        behaviour = serializers.CharField()
        steps = serializers.ListField(child=serializers.CharField(), required=False, default=list)
        source = serializers.ChoiceField(  # type: ignore[assignment]
            choices=ProcedureSource.choices, default=ProcedureSource.INSTRUCTION
        )
        status = serializers.ChoiceField(
            choices=[ProcedureStatus.ACTIVE, ProcedureStatus.CANDIDATE], required=False, allow_null=True, default=None
        )

    @extend_schema(parameters=[FilterSerializer], responses=ProcedureOutputSerializer(many=True), summary="Procedures")
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        data = {k: v for k, v in filters.validated_data.items() if k not in ("cursor", "limit")}
        qs = selectors.procedure_list(tenant=self.tenant, **data)
        return self.paginated(ProcedurePagination(), qs, lambda page: ProcedureOutputSerializer(page, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: ProcedureOutputSerializer}, summary="Create a procedure")
    @idempotent
    def post(self, request: Request) -> Response:
        payload = self.InputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        procedure = services.procedure_create(tenant=self.tenant, created_by=_actor(request), **payload.validated_data)
        return Response(ProcedureOutputSerializer(procedure).data, status=201)


class ProcedureDetailApi(TenantAPIView):
    class PatchSerializer(BodySerializer):
        class Meta:
            ref_name = "ProcedurePatchInput"

        name = serializers.CharField(required=False, max_length=services.MAX_NAME_CHARS)
        description = serializers.CharField(required=False, allow_blank=True)
        agent = IdField(required=False, allow_blank=True)
        trigger = serializers.JSONField(required=False)
        behaviour = serializers.CharField(required=False)
        steps = serializers.ListField(child=serializers.CharField(), required=False)
        status = serializers.ChoiceField(choices=ProcedureStatus.choices, required=False)
        reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)

    @extend_schema(responses=ProcedureOutputSerializer, summary="One procedure (any version)")
    def get(self, request: Request, procedure_id: int) -> Response:
        procedure = selectors.procedure_get(tenant=self.tenant, procedure_id=procedure_id)
        return Response(ProcedureOutputSerializer(procedure).data)

    @extend_schema(
        request=PatchSerializer,
        responses=ProcedureOutputSerializer,
        summary="Edit (a new version) and/or change the status: approve, deprecate, reactivate",
    )
    def patch(self, request: Request, procedure_id: int) -> Response:
        payload = self.PatchSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        changes = dict(payload.validated_data)
        reason = changes.pop("reason", "")
        procedure = services.procedure_update(
            tenant=self.tenant, procedure_id=procedure_id, actor=_actor(request), changes=changes, reason=reason
        )
        return Response(ProcedureOutputSerializer(procedure).data)

    @extend_schema(responses=ProcedureOutputSerializer, summary="Deprecate (a candidate is rejected); history stays")
    def delete(self, request: Request, procedure_id: int) -> Response:
        procedure = services.procedure_deprecate(
            tenant=self.tenant,
            procedure_id=procedure_id,
            actor=_actor(request),
            reason=request.query_params.get("reason", "")[:2000],
        )
        return Response(ProcedureOutputSerializer(procedure).data)


class ProcedureHistoryApi(TenantAPIView):
    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ProcedureHistory"

        lineage = serializers.UUIDField()
        versions = ProcedureOutputSerializer(many=True)
        events = EventOutputSerializer(many=True)

    @extend_schema(responses=OutputSerializer, summary="Every version of the procedure and every decision about it")
    def get(self, request: Request, procedure_id: int) -> Response:
        versions = selectors.procedure_versions(tenant=self.tenant, procedure_id=procedure_id)
        lineage = versions[0].lineage
        events = selectors.procedure_events(tenant=self.tenant, lineage=lineage)
        return Response(self.OutputSerializer({"lineage": lineage, "versions": versions, "events": events}).data)


class ProcedureMatchApi(TenantAPIView):
    # Matching reads memory only.
    required_scope = "read"

    class InputSerializer(BodySerializer):
        class Meta:
            ref_name = "ProcedureMatchInput"

        message = serializers.CharField(required=False, allow_blank=True, default="", max_length=32_000)
        tool_events = serializers.ListField(child=serializers.DictField(), required=False, default=list, max_length=100)
        entities = serializers.ListField(
            child=serializers.CharField(max_length=200), required=False, default=list, max_length=100
        )
        topics = serializers.ListField(
            child=serializers.CharField(max_length=100), required=False, default=list, max_length=100
        )
        agent = IdField(required=False, allow_blank=True, default="")
        session_kind = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
        limit = serializers.IntegerField(required=False, default=10, min_value=1, max_value=selectors.MAX_MATCH_LIMIT)

    class MatchSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ProcedureMatch"

        procedure = ProcedureOutputSerializer()
        score = serializers.FloatField()
        confidence = serializers.FloatField()
        strength = serializers.FloatField()
        why = serializers.ListField(child=serializers.CharField())
        score_parts = serializers.DictField(child=serializers.FloatField())

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ProcedureMatches"

        matches = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        request=InputSerializer,
        responses={200: OutputSerializer},
        summary="The active procedures that apply now, ranked, each with why",
    )
    def post(self, request: Request) -> Response:
        payload = self.InputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        matches = selectors.procedure_match(tenant=self.tenant, **payload.validated_data)
        return Response({"matches": self.MatchSerializer(matches, many=True).data})


class ProcedureOutcomeApi(TenantAPIView):
    class InputSerializer(BodySerializer):
        class Meta:
            ref_name = "ProcedureOutcomeInput"

        applied = serializers.BooleanField()
        success = serializers.BooleanField(required=False, allow_null=True, default=None)
        signal = serializers.FloatField(required=False, allow_null=True, default=None, min_value=-1.0, max_value=1.0)
        session = IdField(required=False, allow_blank=True, allow_null=True, default=None)
        episode = serializers.IntegerField(
            required=False, allow_null=True, default=None, min_value=1, max_value=selectors.MAX_ID
        )

    class OutputSerializer(serializers.Serializer):
        class Meta:
            ref_name = "ProcedureOutcome"

        id = serializers.IntegerField()
        procedure_id = serializers.IntegerField()
        applied = serializers.BooleanField()
        success = serializers.BooleanField(allow_null=True)
        signal = serializers.FloatField(allow_null=True)
        session = serializers.CharField(source="session_external_id")
        episode = serializers.IntegerField(source="episode_id", allow_null=True)
        recorded_at = serializers.DateTimeField()
        procedure = ProcedureOutputSerializer()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer}, summary="Record an outcome")
    @idempotent
    def post(self, request: Request, procedure_id: int) -> Response:
        payload = self.InputSerializer(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        outcome = services.procedure_outcome_record(
            tenant=self.tenant,
            procedure_id=procedure_id,
            applied=data["applied"],
            success=data["success"],
            signal=data["signal"],
            session_external_id=data["session"],
            episode_id=data["episode"],
        )
        idempotency_subjects(request, selectors.outcome_subject(tenant=self.tenant, outcome=outcome))
        return Response(self.OutputSerializer(outcome).data, status=201)
