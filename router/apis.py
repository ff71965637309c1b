"""POST /v1/context, feedback on it, and traces."""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.idempotency import idempotency_subjects, idempotent
from api.pagination import CreatedCursorPagination
from api.serializers import BodySerializer, IdField, SubjectField
from api.views import TenantAPIView
from router import selectors, services
from router.budgets import BUDGET_KEYS, MAX_MAX_TOKENS, MIN_MAX_TOKENS
from router.models import ContextTrace, FeedbackOutcome
from router.types import FORMATS, LAYERS, ContextRequest, Layer

LIST_LAYERS: tuple[Layer, ...] = ("procedural", "semantic", "episodic")


class SourceSerializer(serializers.Serializer):
    episode_id = serializers.IntegerField()
    external_id = serializers.CharField(allow_null=True)
    occurred_at = serializers.DateTimeField(allow_null=True)
    session = serializers.CharField(allow_null=True)
    span = serializers.ListField(
        child=serializers.IntegerField(min_value=0),
        min_length=2,
        max_length=2,
        allow_null=True,
        required=False,
        help_text="The characters [start, end) of the episode's content that the item serves (a passage of a "
        "long episode is served as an excerpt); null when the item does not quote the episode (a fact, a summary).",
    )


class ItemSerializer(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField()
    text = serializers.CharField()
    tokens = serializers.IntegerField()
    score = serializers.FloatField()
    score_parts = serializers.DictField(child=serializers.FloatField())
    sources = SourceSerializer(many=True)


class ContextApi(TenantAPIView):
    # Asking for context reads memory; the trace it leaves is bookkeeping, so a read key suffices.
    required_scope = "read"

    class InputSerializer(BodySerializer):
        subject = SubjectField()
        session = IdField(required=False, allow_blank=True, default="")
        agent = IdField(required=False, allow_blank=True, default="")
        query = serializers.CharField(max_length=32_000, required=False, allow_blank=True, default="")
        max_tokens = serializers.IntegerField(min_value=MIN_MAX_TOKENS, max_value=MAX_MAX_TOKENS, default=4000)
        budgets = serializers.DictField(child=serializers.IntegerField(min_value=0), required=False, default=dict)
        layers = serializers.ListField(
            child=serializers.ChoiceField(choices=LAYERS), required=False, allow_empty=False, max_length=4
        )
        as_of = serializers.DateTimeField(required=False, allow_null=True, default=None)
        format = serializers.ChoiceField(choices=FORMATS, required=False, default="markdown")
        session_kind = serializers.CharField(required=False, allow_blank=True, default="", max_length=100)
        now = serializers.DateTimeField(
            required=False,
            allow_null=True,
            default=None,
            help_text="The moment that time phrases in the query ('last week', 'in May') are resolved "
            "against; default: as_of, else the server's time.",
        )
        transcript_turns = serializers.IntegerField(
            min_value=0,
            max_value=1000,
            required=False,
            default=0,
            help_text="How many of the session's latest events the caller already sends in its own prompt "
            "(its transcript): they are not offered again.",
        )

        def validate_budgets(self, value: dict[str, int]) -> dict[str, int]:
            unknown = sorted(set(value) - set(BUDGET_KEYS))
            if unknown:
                raise serializers.ValidationError(
                    {key: [f"Unknown budget; use one of {', '.join(BUDGET_KEYS)}."] for key in unknown}
                )
            return value

    class OutputSerializer(serializers.Serializer):
        class TokensSerializer(serializers.Serializer):
            total = serializers.IntegerField()
            procedural = serializers.IntegerField()
            semantic = serializers.IntegerField()
            episodic = serializers.IntegerField()
            working = serializers.IntegerField()

        class LayersSerializer(serializers.Serializer):
            procedural = ItemSerializer(many=True)
            semantic = ItemSerializer(many=True)
            episodic = ItemSerializer(many=True)
            working = serializers.DictField()

        trace_id = serializers.UUIDField()
        prompt = serializers.CharField(allow_blank=True)
        tokens = TokensSerializer()
        budgets = serializers.DictField()
        layers = LayersSerializer()

    @extend_schema(
        request=InputSerializer,
        responses=OutputSerializer,
        summary="A token-budgeted, layered context for the next model call",
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        result = services.context_build(
            tenant=self.tenant,
            request=ContextRequest(
                subject=v["subject"],
                session=v["session"],
                agent=v["agent"],
                query=v["query"],
                max_tokens=v["max_tokens"],
                budgets=dict(v["budgets"]),
                layers=tuple(dict.fromkeys(v.get("layers") or LAYERS)),
                as_of=v["as_of"],
                format=v["format"],
                session_kind=v["session_kind"],
                now=v["now"],
                transcript_turns=v["transcript_turns"],
            ),
        )
        return Response(context_body(result))


def context_body(result: services.ContextResult) -> dict[str, Any]:
    built = result.built
    shown_items = result.shown
    layers: dict[str, Any] = {layer: [shown_items[item.id] for item in built.chosen[layer]] for layer in LIST_LAYERS}
    notes = [shown_items[item.id] for item in built.chosen["working"]]
    shown = {item.id.split(":", 1)[1] for item in built.chosen["working"]}
    layers["working"] = {
        "session": result.trace.session or None,
        "version": built.working_version,
        "document": {k: v for k, v in (built.working_document or {}).items() if k in shown},
        "complete": built.working_document is not None and len(shown) == len(built.working_document),
        "items": notes,
    }
    unused = {layer: max(0, built.granted.get(layer, 0) - built.tokens[layer]) for layer in ("episodic", "working")}
    return {
        "trace_id": result.trace.id,
        "prompt": built.prompt,
        "tokens": built.tokens,
        "budgets": {
            **built.budgets.as_dict(),
            "granted": built.granted,
            "unused": unused,
            "unused_policy": "unused procedural, semantic and working budget rolls over to the episodic "
            "layer; unused episodic budget is left to the conversation",
        },
        "layers": layers,
    }


class ContextFeedbackApi(TenantAPIView):
    class InputSerializer(BodySerializer):
        used_item_ids = serializers.ListField(
            child=serializers.CharField(max_length=300), required=False, default=list, max_length=1000
        )
        outcome = serializers.ChoiceField(choices=FeedbackOutcome.choices, required=False, default="unknown")
        signal = serializers.FloatField(min_value=-1.0, max_value=1.0, required=False, allow_null=True, default=None)
        asked_to_repeat = serializers.BooleanField(required=False, default=False)

    class OutputSerializer(serializers.Serializer):
        trace_id = serializers.UUIDField()
        used_item_ids = serializers.ListField(child=serializers.CharField())
        offered_count = serializers.IntegerField()
        used_count = serializers.IntegerField()
        hit_rate = serializers.FloatField()
        outcome = serializers.CharField()
        signal = serializers.FloatField(allow_null=True)
        asked_to_repeat = serializers.BooleanField()
        created_at = serializers.DateTimeField()

    @extend_schema(request=InputSerializer, responses=OutputSerializer, summary="What was used of a context")
    @idempotent
    def post(self, request: Request, trace_id: uuid.UUID) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        feedback = services.context_feedback_record(
            tenant=self.tenant,
            trace_id=trace_id,
            used_item_ids=v["used_item_ids"],
            outcome=v["outcome"],
            signal=v["signal"],
            asked_to_repeat=v["asked_to_repeat"],
        )
        idempotency_subjects(request, feedback.subject)
        body = {
            "trace_id": feedback.trace_id,
            "used_item_ids": feedback.used_item_ids,
            "offered_count": feedback.offered_count,
            "used_count": feedback.used_count,
            "hit_rate": feedback.used_count / feedback.offered_count if feedback.offered_count else 0.0,
            "outcome": feedback.outcome,
            "signal": feedback.signal,
            "asked_to_repeat": feedback.asked_to_repeat,
            "created_at": feedback.created_at,
        }
        return Response(self.OutputSerializer(body).data)


class TraceOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = ContextTrace
        fields = (
            "id", "subject", "session", "agent", "query", "request", "policy", "budgets", "tokens",
            "total_tokens", "offered", "considered", "latency_ms", "trial", "created_at",
        )  # fmt: skip


class TracePagination(CreatedCursorPagination):
    ordering = ("-created_at", "-id")


class TraceListApi(TenantAPIView):
    class FilterSerializer(serializers.Serializer):
        subject = SubjectField(required=False)
        session = IdField(required=False)
        since = serializers.DateTimeField(required=False)

    @extend_schema(parameters=[FilterSerializer], responses=TraceOutputSerializer(many=True), summary="Traces")
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        qs = selectors.trace_list(tenant=self.tenant, **filters.validated_data)
        return self.paginated(TracePagination(), qs, lambda page: TraceOutputSerializer(page, many=True).data)


class TraceDetailApi(TenantAPIView):
    @extend_schema(responses=TraceOutputSerializer, summary="One trace, with its feedback")
    def get(self, request: Request, trace_id: uuid.UUID) -> Response:
        trace = selectors.trace_get(tenant=self.tenant, trace_id=trace_id)
        return Response(TraceOutputSerializer(trace).data)
