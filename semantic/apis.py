"""The /v1/facts and /v1/entities endpoints: one small view per operation, calling one selector or
service (plus the provenance lookup that every fact answer carries)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response

from api.auth import TenantPrincipal
from api.idempotency import idempotent
from api.pagination import CreatedCursorPagination
from api.serializers import BodySerializer, SubjectField
from api.views import TenantAPIView
from core.errors import ValidationProblem
from episodic.aliases import entity_alias_delete, entity_alias_list
from episodic.models import AliasSource
from semantic.aliases import entity_alias_set
from semantic.models import Cardinality, Fact, FactChange, FactOrigin, FactStatus
from semantic.selectors import (
    GRAPH_MAX_DEPTH,
    MAX_K,
    entity_graph,
    fact_get,
    fact_history,
    fact_list,
    fact_search,
    fact_sources,
)
from semantic.services import (
    allowed_categories,
    fact_confirm,
    fact_edit,
    fact_retract,
    fact_revert,
    fact_review_decide,
    fact_upsert,
)
from semantic.types import Actor, FactCandidate

BIGINT_MAX = 2**63 - 1


def _actor(request: Request, reason: str = "") -> Actor:
    principal = request.user
    key_id = principal.api_key.prefix if isinstance(principal, TenantPrincipal) else ""
    return Actor(type="api_key", id=key_id, reason=reason)


def _clean_path_text(value: str, pointer: str) -> str:
    if "\x00" in value or any("\ud800" <= ch <= "\udfff" for ch in value):
        raise ValidationProblem.at(pointer, "must not contain NUL or surrogate characters.")
    return value


@extend_schema_serializer(component_name="FactSource")
class SourceSerializer(serializers.Serializer):
    episode_id = serializers.IntegerField()
    external_id = serializers.CharField(allow_null=True)
    occurred_at = serializers.DateTimeField()
    session = serializers.CharField()


@extend_schema_serializer(component_name="Fact")
class FactOutputSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    subject = serializers.CharField()
    entity = serializers.CharField()
    attribute = serializers.CharField()
    value = serializers.CharField()
    statement = serializers.CharField()
    category = serializers.CharField()
    cardinality = serializers.CharField()
    confidence = serializers.FloatField()
    status = serializers.CharField()
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    recorded_at = serializers.DateTimeField()
    last_confirmed_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    use_count = serializers.IntegerField()
    confirmation_count = serializers.IntegerField()
    origin = serializers.CharField()
    superseded_by = serializers.UUIDField(source="superseded_by_id", allow_null=True)
    object_entity = serializers.CharField(allow_null=True)
    source_episode_ids = serializers.SerializerMethodField()
    sources = serializers.SerializerMethodField()

    def _sources(self, fact: Fact) -> list[Any]:
        return list(self.context.get("sources", {}).get(fact.id, []))

    @extend_schema_field(serializers.ListField(child=serializers.IntegerField()))
    def get_source_episode_ids(self, fact: Fact) -> list[int]:
        return [s.episode_id for s in self._sources(fact)]

    @extend_schema_field(SourceSerializer(many=True))
    def get_sources(self, fact: Fact) -> list[dict[str, Any]]:
        return [SourceSerializer(s).data for s in self._sources(fact)]


def _facts_out(request: Request, tenant: Any, facts: Sequence[Fact]) -> list[dict[str, Any]]:
    sources = fact_sources(tenant=tenant, fact_ids=[f.id for f in facts])
    return list(FactOutputSerializer(facts, many=True, context={"sources": sources}).data)


def _fact_out(request: Request, tenant: Any, fact: Fact | None) -> dict[str, Any] | None:
    if fact is None:
        return None
    return _facts_out(request, tenant, [fact])[0]


class FactPagination(CreatedCursorPagination):
    ordering = ("-recorded_at", "-id")


class FactListCreateApi(TenantAPIView):
    @extend_schema_serializer(component_name="FactUpsertInput")
    class InputSerializer(BodySerializer):
        subject = SubjectField(required=False, allow_blank=True, default="")
        entity = serializers.CharField(max_length=255)
        attribute = serializers.CharField(max_length=100)
        value = serializers.CharField()
        statement = serializers.CharField()
        category = serializers.CharField(max_length=64, default="other")
        confidence = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.8)
        valid_from = serializers.DateTimeField(required=False, allow_null=True, default=None)
        source_episode_ids = serializers.ListField(
            child=serializers.IntegerField(min_value=1, max_value=BIGINT_MAX), max_length=100, default=list
        )
        cardinality = serializers.ChoiceField(choices=Cardinality.values, required=False, allow_null=True)
        object_entity = serializers.CharField(required=False, allow_null=True, max_length=255)

    @extend_schema_serializer(component_name="FactListFilter")
    class FilterSerializer(serializers.Serializer):
        entity = serializers.CharField(required=False, max_length=255)
        attribute = serializers.CharField(required=False, max_length=100)
        category = serializers.CharField(required=False, max_length=64)
        status = serializers.ChoiceField(choices=[*FactStatus.values, "any"], required=False)
        subject = SubjectField(required=False)
        as_of = serializers.DateTimeField(required=False)
        needs_confirmation = serializers.BooleanField(required=False, default=False)

    @extend_schema_serializer(component_name="FactUpsertOutput")
    class UpsertOutputSerializer(serializers.Serializer):
        action = serializers.ChoiceField(choices=["created", "confirmed", "superseded", "pending"])
        fact = FactOutputSerializer()
        previous = FactOutputSerializer(allow_null=True)

    @extend_schema(
        parameters=[FilterSerializer],
        responses=FactOutputSerializer(many=True),
        summary="List facts (active ones by default; status=any for every status)",
    )
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        qs = fact_list(tenant=self.tenant, **filters.validated_data).defer("embedding", "search_vector")
        return self.paginated(FactPagination(), qs, lambda page: _facts_out(request, self.tenant, page))

    @extend_schema(
        request=InputSerializer,
        responses={200: UpsertOutputSerializer, 201: UpsertOutputSerializer},
        summary="Write a fact through the merge: created, confirmed, superseded or pending",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        body = self.InputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        result = fact_upsert(
            tenant=self.tenant,
            candidate=FactCandidate(
                subject=data["subject"],
                entity=data["entity"],
                attribute=data["attribute"],
                value=data["value"],
                statement=data["statement"],
                category=data["category"],
                confidence=data["confidence"],
                source_episode_ids=data["source_episode_ids"],
                observed_at=data["valid_from"],
                cardinality=data.get("cardinality"),
                origin=FactOrigin.API,
                object_entity=data.get("object_entity"),
            ),
            actor=_actor(request),
        )
        payload = {
            "action": result.action,
            "fact": _fact_out(request, self.tenant, result.fact),
            "previous": _fact_out(request, self.tenant, result.previous),
        }
        return Response(payload, status=200 if result.action == "confirmed" else 201)


class FactDetailApi(TenantAPIView):
    @extend_schema_serializer(component_name="FactPatch")
    class PatchSerializer(BodySerializer):
        value = serializers.CharField(required=False)
        statement = serializers.CharField(required=False)
        category = serializers.CharField(required=False, max_length=64)
        confidence = serializers.FloatField(required=False, min_value=0.0, max_value=1.0)
        reason = serializers.CharField(required=False, allow_blank=True, max_length=1000, default="")

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if not {"value", "statement", "category", "confidence"} & set(attrs):
                raise serializers.ValidationError("Give at least one of value, statement, category, confidence.")
            return attrs

    @extend_schema_serializer(component_name="FactRetractParams")
    class DeleteSerializer(serializers.Serializer):
        reason = serializers.CharField(required=False, allow_blank=True, max_length=1000, default="")

    @extend_schema(responses=FactOutputSerializer, summary="One fact")
    def get(self, request: Request, fact_id: uuid.UUID) -> Response:
        return Response(_fact_out(request, self.tenant, fact_get(tenant=self.tenant, fact_id=fact_id)))

    @extend_schema(request=PatchSerializer, responses=FactOutputSerializer, summary="Edit a fact (logged)")
    def patch(self, request: Request, fact_id: uuid.UUID) -> Response:
        body = self.PatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = dict(body.validated_data)
        reason = data.pop("reason")
        fact = fact_edit(tenant=self.tenant, fact_id=fact_id, actor=_actor(request, reason), **data)
        return Response(_fact_out(request, self.tenant, fact))

    @extend_schema(
        parameters=[DeleteSerializer], responses=FactOutputSerializer, summary="Retract a fact (history is kept)"
    )
    def delete(self, request: Request, fact_id: uuid.UUID) -> Response:
        params = self.DeleteSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        fact = fact_retract(tenant=self.tenant, fact_id=fact_id, actor=_actor(request, params.validated_data["reason"]))
        return Response(_fact_out(request, self.tenant, fact))


class FactConfirmApi(TenantAPIView):
    @extend_schema(request=None, responses=FactOutputSerializer, summary="Confirm a fact")
    @idempotent
    def post(self, request: Request, fact_id: uuid.UUID) -> Response:
        fact = fact_confirm(tenant=self.tenant, fact_id=fact_id, actor=_actor(request))
        return Response(_fact_out(request, self.tenant, fact))


@extend_schema_serializer(component_name="FactChange")
class FactChangeSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    old_value = serializers.CharField(allow_null=True)
    new_value = serializers.CharField(allow_null=True)
    old_status = serializers.CharField(allow_null=True)
    new_status = serializers.CharField(allow_null=True)
    old_confidence = serializers.FloatField(allow_null=True)
    new_confidence = serializers.FloatField(allow_null=True)
    related_fact = serializers.UUIDField(source="related_fact_id", allow_null=True)
    reason = serializers.CharField()
    actor_type = serializers.CharField()
    actor_id = serializers.CharField()
    source_episode_ids = serializers.ListField(child=serializers.IntegerField())
    created_at = serializers.DateTimeField()


class FactHistoryApi(TenantAPIView):
    @extend_schema_serializer(component_name="FactHistory")
    class OutputSerializer(serializers.Serializer):
        fact_id = serializers.UUIDField()
        changes = FactChangeSerializer(many=True)

    @extend_schema(responses=OutputSerializer, summary="The fact's changes, oldest first")
    def get(self, request: Request, fact_id: uuid.UUID) -> Response:
        changes: list[FactChange] = fact_history(tenant=self.tenant, fact_id=fact_id)
        return Response(self.OutputSerializer({"fact_id": fact_id, "changes": changes}).data)


class FactReviewApi(TenantAPIView):
    required_scope = "admin"

    @extend_schema_serializer(component_name="FactReviewInput")
    class InputSerializer(BodySerializer):
        approve = serializers.BooleanField()
        value = serializers.CharField(required=False)
        statement = serializers.CharField(required=False)
        reason = serializers.CharField(required=False, allow_blank=True, max_length=1000, default="")

    @extend_schema(request=InputSerializer, responses=FactOutputSerializer, summary="Approve or reject a pending fact")
    @idempotent
    def post(self, request: Request, fact_id: uuid.UUID) -> Response:
        body = self.InputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        fact = fact_review_decide(
            tenant=self.tenant,
            fact_id=fact_id,
            approve=data["approve"],
            actor=_actor(request, data["reason"]),
            value=data.get("value"),
            statement=data.get("statement"),
        )
        return Response(_fact_out(request, self.tenant, fact))


class FactChangeRevertApi(TenantAPIView):
    required_scope = "admin"

    @extend_schema_serializer(component_name="FactRevertInput")
    class InputSerializer(BodySerializer):
        reason = serializers.CharField(required=False, allow_blank=True, max_length=1000, default="")

    @extend_schema(
        request=InputSerializer,
        responses={201: FactListCreateApi.UpsertOutputSerializer, 200: FactListCreateApi.UpsertOutputSerializer},
        summary="Reinstate the value a supersession replaced",
    )
    @idempotent
    def post(self, request: Request, change_id: int) -> Response:
        body = self.InputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = fact_revert(
            tenant=self.tenant, change_id=change_id, actor=_actor(request, body.validated_data["reason"])
        )
        payload = {
            "action": result.action,
            "fact": _fact_out(request, self.tenant, result.fact),
            "previous": _fact_out(request, self.tenant, result.previous),
        }
        return Response(payload, status=200 if result.action == "confirmed" else 201)


@extend_schema_serializer(component_name="FactSearchResult")
class FactSearchResultSerializer(serializers.Serializer):
    fact = FactOutputSerializer()
    score = serializers.FloatField()
    score_parts = serializers.DictField(child=serializers.FloatField())


class FactSearchApi(TenantAPIView):
    # A search reads: the method's default (write) would refuse a read key and serve a write-only one.
    required_scope = "read"

    @extend_schema_serializer(component_name="FactSearchInput")
    class InputSerializer(BodySerializer):
        query = serializers.CharField(max_length=4000)
        subject = SubjectField(required=False)
        entity = serializers.CharField(required=False, max_length=255)
        category = serializers.CharField(required=False, max_length=64)
        k = serializers.IntegerField(min_value=1, max_value=MAX_K, default=10)
        min_score = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.0)
        as_of = serializers.DateTimeField(required=False)

    @extend_schema_serializer(component_name="FactSearchOutput")
    class OutputSerializer(serializers.Serializer):
        results = serializers.ListField(child=FactSearchResultSerializer())

    @extend_schema(request=InputSerializer, responses=OutputSerializer, summary="Hybrid fact search")
    def post(self, request: Request) -> Response:
        body = self.InputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        category = data.get("category")
        if category is not None and category not in allowed_categories(self.tenant):
            raise ValidationProblem.at("/category", f"unknown category {category!r}.")
        results = fact_search(tenant=self.tenant, **data)
        facts = _facts_out(request, self.tenant, [r.fact for r in results])
        return Response(
            {
                "results": [
                    {"fact": fact, "score": r.score, "score_parts": r.score_parts}
                    for fact, r in zip(facts, results, strict=True)
                ]
            }
        )


@extend_schema_serializer(component_name="EntityGraphNode")
class EntityGraphNodeSerializer(serializers.Serializer):
    entity = serializers.CharField()
    depth = serializers.IntegerField()


@extend_schema_serializer(component_name="EntityGraphEdge")
class EntityGraphEdgeSerializer(serializers.Serializer):
    source = serializers.CharField()  # type: ignore[assignment]
    attribute = serializers.CharField()
    target = serializers.CharField()
    fact_id = serializers.UUIDField()


class EntityGraphApi(TenantAPIView):
    @extend_schema_serializer(component_name="EntityGraphParams")
    class FilterSerializer(serializers.Serializer):
        depth = serializers.IntegerField(min_value=1, max_value=10, default=2)

    @extend_schema_serializer(component_name="EntityGraph")
    class OutputSerializer(serializers.Serializer):
        entity = serializers.CharField()
        depth = serializers.IntegerField()
        nodes = serializers.ListField(child=EntityGraphNodeSerializer())
        edges = serializers.ListField(child=EntityGraphEdgeSerializer())
        facts = serializers.ListField(child=FactOutputSerializer())
        truncated = serializers.BooleanField()

    @extend_schema(
        parameters=[FilterSerializer],
        responses=OutputSerializer,
        summary=f"The entity's facts and related entities (depth capped at {GRAPH_MAX_DEPTH})",
    )
    def get(self, request: Request, entity: str) -> Response:
        params = self.FilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        graph = entity_graph(
            tenant=self.tenant, entity=_clean_path_text(entity, "/entity"), depth=params.validated_data["depth"]
        )
        return Response(
            {
                "entity": graph.entity,
                "depth": graph.depth,
                "nodes": EntityGraphNodeSerializer(graph.nodes, many=True).data,
                "edges": EntityGraphEdgeSerializer(graph.edges, many=True).data,
                "facts": _facts_out(request, self.tenant, graph.facts),
                "truncated": graph.truncated,
            }
        )


@extend_schema_serializer(component_name="EntityAlias")
class EntityAliasSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    alias = serializers.CharField()
    entity = serializers.CharField()
    source = serializers.ChoiceField(choices=AliasSource.values)  # type: ignore[assignment]
    subject = serializers.CharField()
    source_episode_id = serializers.IntegerField(allow_null=True)
    created_by = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class EntityAliasListCreateApi(TenantAPIView):
    """Reading aliases needs `read`; setting one changes how the tenant's facts are filed: `admin`."""

    @property
    def required_scope(self) -> str | None:
        return None if self.request.method in SAFE_METHODS else "admin"

    @extend_schema_serializer(component_name="EntityAliasInput")
    class InputSerializer(BodySerializer):
        alias = serializers.CharField(max_length=255)
        entity = serializers.CharField(max_length=255)

    @extend_schema_serializer(component_name="EntityAliasFilter")
    class FilterSerializer(serializers.Serializer):
        entity = serializers.CharField(required=False, max_length=255)
        alias = serializers.CharField(required=False, max_length=255)
        source = serializers.ChoiceField(choices=AliasSource.values, required=False)  # type: ignore[assignment]
        subject = SubjectField(required=False)

    @extend_schema_serializer(component_name="EntityAliasSetOutput")
    class SetOutputSerializer(serializers.Serializer):
        action = serializers.ChoiceField(choices=["created", "updated", "unchanged"])
        alias = EntityAliasSerializer()
        facts_moved = serializers.IntegerField()

    @extend_schema(
        parameters=[FilterSerializer],
        responses=EntityAliasSerializer(many=True),
        summary="List entity aliases (set by operators, and learned from conversations)",
    )
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        qs = entity_alias_list(tenant=self.tenant, **filters.validated_data)
        return self.paginated(CreatedCursorPagination(), qs, lambda page: EntityAliasSerializer(page, many=True).data)

    @extend_schema(
        request=InputSerializer,
        responses={200: SetOutputSerializer, 201: SetOutputSerializer},
        summary="Set an operator's alias: the facts filed under it move to its entity",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        body = self.InputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        result = entity_alias_set(
            tenant=self.tenant,
            alias=body.validated_data["alias"],
            entity=body.validated_data["entity"],
            actor=_actor(request, "entity alias set"),
        )
        payload = {
            "action": result.action,
            "alias": EntityAliasSerializer(result.alias).data,
            "facts_moved": result.facts_moved,
        }
        return Response(payload, status=201 if result.action == "created" else 200)


class EntityAliasDetailApi(TenantAPIView):
    required_scope = "admin"

    @extend_schema(responses=EntityAliasSerializer, summary="Remove an alias (facts already merged stay merged)")
    def delete(self, request: Request, alias_id: int) -> Response:
        return Response(EntityAliasSerializer(entity_alias_delete(tenant=self.tenant, alias_id=alias_id)).data)
