"""Python client for Engram, the layered memory service for AI agents."""

from engram_client._operations import Page
from engram_client._transport import Call, RetryPolicy
from engram_client.client import AsyncEngramClient, EngramClient
from engram_client.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    EngramError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    PreconditionFailedError,
    RateLimitError,
    ServerError,
    TransportError,
    UnprocessableError,
)
from engram_client.grounding import used_item_ids
from engram_client.models import context_item_ids, context_items

__all__ = [
    "APIError",
    "AsyncEngramClient",
    "AuthenticationError",
    "BadRequestError",
    "Call",
    "ConflictError",
    "EngramClient",
    "EngramError",
    "NotFoundError",
    "Page",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "PreconditionFailedError",
    "RateLimitError",
    "RetryPolicy",
    "ServerError",
    "TransportError",
    "UnprocessableError",
    "context_item_ids",
    "context_items",
    "used_item_ids",
]
