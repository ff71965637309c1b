"""Ending a session, which enqueues its consolidation."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.idempotency import idempotent
from api.serializers import BodySerializer
from api.views import TenantAPIView
from consolidation.sessions import session_close
from episodic.apis import SessionOutputSerializer, session_dict
from episodic.models import Outcome


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
