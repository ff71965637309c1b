"""The episodic and working-memory API: episodes, sessions, scratchpads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import BooleanField, ExpressionWrapper, Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.idempotency import idempotent
from api.pagination import CreatedCursorPagination
from api.parsers import LimitedJSONParser
from api.serializers import BodySerializer, IdField, SubjectField
from api.views import TenantAPIView
from core.embedding import EMBEDDING_DIM
from core.errors import ValidationProblem
from episodic import scratchpad as pads
from episodic.extraction import MAX_ENTITY_CHARS, MAX_TOPIC_CHARS
from episodic.models import Episode, EpisodeKind, Outcome, Session
from episodic.selectors import ScoredEpisode, SessionDetail, episode_list, episode_search, session_detail
from episodic.services import episodes_append
from episodic.validation import FIELDS, unit_vector, vector_component_ok


class AwareDateTimeField(serializers.DateTimeField):
    """A timestamp that must carry its time zone: a naive one is ambiguous, so it is refused."""

    def to_internal_value(self, value: Any) -> Any:
        parsed = super().to_internal_value(value)
        if isinstance(value, str) and not _has_zone(value):
            raise serializers.ValidationError("The timestamp needs a time zone (for example 2024-05-01T12:00:00Z).")
        return parsed


def _has_zone(value: str) -> bool:
    try:
        return datetime.fromisoformat(value.strip()).tzinfo is not None
    except ValueError:
        return False


def episode_dict(episode: Episode) -> dict[str, Any]:
    """The full public shape of an episode (built without a serializer: lists of 500 are a hot path)."""
    shape: dict[str, Any] = {"id": episode.pk, "session": episode.session.external_id}
    shape.update((name, getattr(episode, name)) for name in Episode.RECORD_FIELDS)
    shape["occurred_at"] = episode.occurred_at.isoformat()
    shape["created_at"] = episode.created_at.isoformat()
    shape["embedded"] = _embedded(episode)
    return shape


def _embedded(episode: Episode) -> bool:
    annotated = getattr(episode, "has_embedding", None)
    if annotated is not None:
        return bool(annotated)
    return episode.embedding is not None


class EpisodeOutputSerializer(serializers.Serializer):
    """Schema of `episode_dict`."""

    id = serializers.IntegerField()
    session = serializers.CharField()
    subject = serializers.CharField()
    agent = serializers.CharField()
    kind = serializers.ChoiceField(choices=EpisodeKind.choices)
    role = serializers.CharField()
    content = serializers.CharField()
    payload = serializers.DictField()
    entities = serializers.ListField(child=serializers.CharField())
    topics = serializers.ListField(child=serializers.CharField())
    occurred_at = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    external_id = serializers.CharField(allow_null=True)
    token_count = serializers.IntegerField()
    content_hash = serializers.CharField()
    outcome = serializers.ChoiceField(choices=Outcome.choices, allow_null=True)
    outcome_signal = serializers.FloatField(allow_null=True)
    embedded = serializers.BooleanField()


class EpisodeCursorPagination(CreatedCursorPagination):
    ordering = ("-occurred_at", "-id")


class EpisodeAscCursorPagination(CreatedCursorPagination):
    ordering = ("occurred_at", "id")


class EpisodeFilterSerializer(serializers.Serializer):
    subject = SubjectField(required=False)
    agent = IdField(required=False, allow_blank=True)
    session = IdField(required=False)
    kind = serializers.ChoiceField(required=False, choices=EpisodeKind.choices)
    entity = serializers.CharField(required=False, max_length=MAX_ENTITY_CHARS)
    topic = serializers.CharField(required=False, max_length=MAX_TOPIC_CHARS)
    since = AwareDateTimeField(required=False)
    until = AwareDateTimeField(required=False)


class EpisodeListCreateApi(TenantAPIView):
    """GET: a page of episodes, newest first unless `order=asc`. POST: append a batch."""

    class FilterSerializer(EpisodeFilterSerializer):
        order = serializers.ChoiceField(required=False, choices=("asc", "desc"), default="desc")

    class EpisodeInputSerializer(serializers.Serializer):
        """Documentation of one item. Validation is `episodic.validation.parse_items`, shared by every
        writer and written for speed; it reports errors with the same JSON pointers."""

        subject = SubjectField()
        session = IdField(
            required=False,
            max_length=255,
            help_text="One subject's conversation, named by the caller (tenant-wide). Omitted: the subject's "
            "session of the episode's UTC day, `auto:<YYYY-MM-DD>:<subject>`.",
        )
        agent = IdField(required=False)
        kind = serializers.ChoiceField(choices=EpisodeKind.choices, default=EpisodeKind.MESSAGE)
        role = serializers.CharField(required=False, max_length=64)
        content = serializers.CharField(required=False, max_length=settings.ENGRAM["MAX_EPISODE_CHARS"])
        payload = serializers.DictField(required=False)
        occurred_at = AwareDateTimeField(required=False)
        entities = serializers.ListField(child=serializers.CharField(max_length=MAX_ENTITY_CHARS), required=False)
        topics = serializers.ListField(child=serializers.CharField(max_length=MAX_TOPIC_CHARS), required=False)
        outcome = serializers.ChoiceField(choices=Outcome.choices, required=False, allow_null=True)
        outcome_signal = serializers.FloatField(required=False, allow_null=True)
        external_id = serializers.CharField(required=False, max_length=255)
        embedding = serializers.ListField(
            child=serializers.FloatField(), min_length=EMBEDDING_DIM, max_length=EMBEDDING_DIM, required=False
        )

    class AppendedSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        session = serializers.CharField()
        external_id = serializers.CharField(allow_null=True)
        kind = serializers.CharField()
        occurred_at = serializers.DateTimeField()
        created_at = serializers.DateTimeField()
        token_count = serializers.IntegerField()
        content_hash = serializers.CharField()
        entities = serializers.ListField(child=serializers.CharField())
        topics = serializers.ListField(child=serializers.CharField())

    class OutputSerializer(serializers.Serializer):
        count = serializers.IntegerField()
        episodes = serializers.ListField(child=serializers.DictField(), help_text="AppendedSerializer items")

    @extend_schema(
        parameters=[FilterSerializer],
        responses=EpisodeOutputSerializer(many=True),
        summary="List episodes (cursor pagination; newest first unless order=asc)",
    )
    def get(self, request: Request) -> Response:
        filters = self.FilterSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        params = dict(filters.validated_data)
        order = params.pop("order")
        # Pages carry no vectors: a flag says whether the episode has been embedded yet.
        queryset = (
            episode_list(tenant=self.tenant, **params)
            .defer("embedding", "search_vector")
            .annotate(has_embedding=ExpressionWrapper(Q(embedding__isnull=False), output_field=BooleanField()))
        )
        paginator = EpisodeAscCursorPagination() if order == "asc" else EpisodeCursorPagination()
        return self.paginated(paginator, queryset, lambda page: [episode_dict(e) for e in page])

    @extend_schema(
        request=inline_serializer(name="EpisodeAppendRequest", fields={"episodes": EpisodeInputSerializer(many=True)}),
        responses={201: OutputSerializer},
        summary="Append 1 to 1,000 episodes, all or nothing (Idempotency-Key honoured)",
    )
    @idempotent
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ValidationProblem.at("/", 'The body is an object: {"episodes": [...]}.')
        unknown = sorted(set(request.data) - {"episodes"})
        if unknown and "episodes" not in request.data and set(request.data) & FIELDS:
            raise ValidationProblem.at(
                "/",
                'This looks like one episode sent bare; the body is a list of 1 to 1,000 episodes under "episodes": '
                '{"episodes": [{"subject": ..., "content": ...}]}.',
            )
        if unknown:
            raise ValidationProblem.at(f"/{unknown[0]}", "Unknown field.")
        if "episodes" not in request.data:
            raise ValidationProblem.at("/episodes", "This field is required.")
        stored = episodes_append(
            tenant=self.tenant, items=request.data["episodes"], embed_inline=True, refuse_ended=True
        )
        body = {
            "count": len(stored),
            "episodes": [
                {
                    "id": e.pk,
                    "session": e.session.external_id,
                    "external_id": e.external_id,
                    "kind": e.kind,
                    "occurred_at": e.occurred_at.isoformat(),
                    "created_at": e.created_at.isoformat(),
                    "token_count": e.token_count,
                    "content_hash": e.content_hash,
                    "entities": e.entities,
                    "topics": e.topics,
                }
                for e in stored
            ],
        }
        return Response(body, status=201)


class EpisodeSearchApi(TenantAPIView):
    """Hybrid search over events: full-text, vector and entity/topic overlap, fused by rank."""

    required_scope = "read"

    class InputSerializer(BodySerializer, EpisodeFilterSerializer):
        query = serializers.CharField(max_length=4000, allow_blank=True)
        kinds = serializers.ListField(
            child=serializers.ChoiceField(choices=EpisodeKind.choices), required=False, max_length=10
        )
        entities = serializers.ListField(
            child=serializers.CharField(max_length=MAX_ENTITY_CHARS), required=False, max_length=100
        )
        topics = serializers.ListField(
            child=serializers.CharField(max_length=MAX_TOPIC_CHARS), required=False, max_length=100
        )
        limit = serializers.IntegerField(required=False, min_value=1, max_value=200, default=20)
        query_embedding = serializers.ListField(child=serializers.FloatField(), required=False)
        exclude_ids = serializers.ListField(child=serializers.IntegerField(), required=False, max_length=1000)

        def validate_query_embedding(self, value: list[float]) -> list[float]:
            if len(value) != EMBEDDING_DIM:
                raise serializers.ValidationError(
                    f"Wrong dimension: {len(value)}; the embedding dimension is {EMBEDDING_DIM}."
                )
            if not all(vector_component_ok(x) for x in value):
                raise serializers.ValidationError("Every component must be a finite number of magnitude at most 1e30.")
            unit = unit_vector(value)
            if unit is None:
                raise serializers.ValidationError("The zero vector has no direction.")
            return unit

    class OutputSerializer(serializers.Serializer):
        results = serializers.ListField(child=serializers.DictField())

    @extend_schema(request=InputSerializer, responses=OutputSerializer, summary="Hybrid search over episodes")
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = dict(data.validated_data)
        kind = params.pop("kind", None)
        if kind is not None:
            params["kinds"] = [*params.get("kinds", []), kind]
        results = episode_search(tenant=self.tenant, **params)
        return Response({"results": [_scored(r) for r in results]})


def _scored(result: ScoredEpisode) -> dict[str, Any]:
    return {**episode_dict(result.episode), "score": result.score, "score_parts": result.score_parts}


def session_dict(session: Session) -> dict[str, Any]:
    return {
        "id": session.pk,
        "session": session.external_id,
        "subject": session.subject,
        "agent": session.agent,
        "status": session.status,
        "started_at": session.started_at.isoformat(),
        "ended_at": session.ended_at.isoformat() if session.ended_at else None,
        "last_event_at": session.last_event_at.isoformat() if session.last_event_at else None,
        "outcome": session.outcome,
        "outcome_signal": session.outcome_signal,
        "summary": session.summary,
        "episode_count": session.episode_count,
    }


class SessionOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    session = serializers.CharField()
    subject = serializers.CharField()
    agent = serializers.CharField()
    status = serializers.CharField()
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    last_event_at = serializers.DateTimeField(allow_null=True)
    outcome = serializers.CharField(allow_null=True)
    outcome_signal = serializers.FloatField(allow_null=True)
    summary = serializers.CharField()
    episode_count = serializers.IntegerField()


class SessionDetailApi(TenantAPIView):
    class OutputSerializer(SessionOutputSerializer):
        counts = serializers.DictField()

    @extend_schema(responses=OutputSerializer, summary="A session with its counts and summary")
    def get(self, request: Request, session: str) -> Response:
        detail: SessionDetail = session_detail(tenant=self.tenant, external_id=session)
        body = session_dict(detail.session)
        body["counts"] = {
            "episodes": detail.session.episode_count,
            "by_kind": detail.by_kind,
            "tokens": detail.tokens,
            "pending_embeddings": detail.pending_embeddings,
            "first_event_at": detail.first_event_at.isoformat() if detail.first_event_at else None,
        }
        return Response(body)


class MergePatchParser(LimitedJSONParser):
    media_type = "application/merge-patch+json"


IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description='The scratchpad version, as in its ETag ("3").',
)


def _if_match(request: Request) -> int | str | None:
    raw = request.headers.get("If-Match")
    if raw is None:
        return None
    value = raw.strip()
    if value == "*":
        return "*"
    value = value.removeprefix("W/").strip('"')
    if not value.isdigit():
        raise ValidationProblem.at("/", f'If-Match must be a scratchpad version such as "3"; got {raw!r}.')
    return int(value)


def _document(request: Request) -> Any:
    """The body's JSON value. An empty body (Content-Length 0, or a chunked body of no bytes, which the
    body middleware has read whole) says nothing: DRF would hand it over as {} and a PUT would wipe the
    scratchpad, so it is refused. Clearing is an explicit {} or a DELETE."""
    if request.stream is None:
        raise ValidationProblem.at(
            "/", "The body is empty; send a JSON object ({} clears the scratchpad, DELETE removes it)."
        )
    return request.data


def _scratchpad_response(pad: pads.Scratchpad, status: int = 200) -> Response:
    body = {
        "session": pad.session,
        "document": pad.document,
        "version": pad.version,
        "created_at": pad.created_at.isoformat() if pad.created_at else None,
        "updated_at": pad.updated_at.isoformat(),
        "expires_at": pad.expires_at.isoformat() if pad.expires_at else None,
    }
    response = Response(body, status=status)
    response["ETag"] = f'"{pad.version}"'
    return response


class ScratchpadApi(TenantAPIView):
    """Working memory of a session: GET, PUT (replace), PATCH (JSON merge patch), DELETE."""

    parser_classes = [LimitedJSONParser, MergePatchParser]

    class OutputSerializer(serializers.Serializer):
        session = serializers.CharField()
        document = serializers.DictField()
        version = serializers.IntegerField()
        created_at = serializers.DateTimeField(allow_null=True)
        updated_at = serializers.DateTimeField()
        expires_at = serializers.DateTimeField(allow_null=True)

    class DeletedSerializer(serializers.Serializer):
        session = serializers.CharField()
        deleted = serializers.BooleanField()
        version = serializers.IntegerField()
        summary_episode_id = serializers.IntegerField(allow_null=True)

    @extend_schema(responses=OutputSerializer, summary="The session's scratchpad")
    def get(self, request: Request, session: str) -> Response:
        return _scratchpad_response(pads.scratchpad_get_or_404(tenant=self.tenant, session_external_id=session))

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={200: OutputSerializer, 201: OutputSerializer},
        parameters=[IF_MATCH, OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER, required=False)],
        summary="Replace the scratchpad (If-Match: version; If-None-Match: * to create only)",
    )
    def put(self, request: Request, session: str) -> Response:
        if_match = _if_match(request)
        if if_match == "*":
            current = pads.scratchpad_get_or_404(tenant=self.tenant, session_external_id=session)
            if_match = current.version
        if_none_match = (request.headers.get("If-None-Match") or "").strip() == "*"
        pad, created = pads.scratchpad_put(
            tenant=self.tenant,
            session_external_id=session,
            document=_document(request),
            if_match=if_match if isinstance(if_match, int) else None,
            if_none_match=if_none_match,
        )
        return _scratchpad_response(pad, status=201 if created else 200)

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses=OutputSerializer,
        parameters=[IF_MATCH],
        summary="Apply a JSON merge patch (RFC 7396) to the scratchpad",
    )
    def patch(self, request: Request, session: str) -> Response:
        if_match = _if_match(request)
        pad = pads.scratchpad_patch(
            tenant=self.tenant,
            session_external_id=session,
            patch=_document(request),
            if_match=if_match if isinstance(if_match, int) else None,
        )
        return _scratchpad_response(pad)

    @extend_schema(
        parameters=[OpenApiParameter("summarise", bool, required=False), IF_MATCH],
        responses=DeletedSerializer,
        summary="Delete the scratchpad; with summarise=true it first becomes a summary episode",
    )
    def delete(self, request: Request, session: str) -> Response:
        raw = (request.query_params.get("summarise") or "false").lower()
        if raw not in ("true", "false", "1", "0"):
            raise ValidationProblem.at("/summarise", "Must be true or false.")
        if_match = _if_match(request)
        if if_match == "*":
            if_match = None
        deletion = pads.scratchpad_delete(
            tenant=self.tenant,
            session_external_id=session,
            summarise=raw in ("true", "1"),
            if_match=if_match if isinstance(if_match, int) else None,
        )
        return Response(
            {
                "session": session,
                "deleted": True,
                "version": deletion.version,
                "summary_episode_id": deletion.summary_episode.pk if deletion.summary_episode else None,
            }
        )
