"""Exceptions raised by the client. An error answer from Engram is RFC 9457 problem+json; its fields
are kept on the exception (`status`, `type`, `title`, `detail`, `errors` with JSON pointers)."""

from __future__ import annotations

from typing import Any

import httpx


class EngramError(Exception):
    """Base of every error this client raises."""


class TransportError(EngramError):
    """No answer from the service (connection refused, timeout) after the configured retries."""


class APIError(EngramError):
    """Engram answered with an error status; the problem+json body is unpacked onto the exception."""

    def __init__(self, response: httpx.Response, body: Any) -> None:
        problem = body if isinstance(body, dict) else {}
        self.response = response
        self.status: int = response.status_code
        self.type: str = str(problem.get("type", "about:blank"))
        self.title: str = str(problem.get("title", response.reason_phrase))
        self.detail: str = str(problem.get("detail", "") if problem else (response.text[:500] or ""))
        self.errors: list[dict[str, Any]] = list(problem.get("errors") or [])
        self.problem: dict[str, Any] = problem
        super().__init__(f"{self.status} {self.title}: {self.detail}")

    @property
    def pointers(self) -> list[str]:
        """The JSON pointers of the fields named by a validation error."""
        return [str(e.get("pointer", "")) for e in self.errors]


class BadRequestError(APIError):
    """400: the request is malformed or a field is invalid (see `errors`)."""


class AuthenticationError(APIError):
    """401: no API key, or a wrong or revoked one."""


class PermissionDeniedError(APIError):
    """403: the key lacks the scope the operation needs."""


class NotFoundError(APIError):
    """404: no such object in this tenant (another tenant's objects answer the same)."""


class ConflictError(APIError):
    """409: the request conflicts with the current state, or its Idempotency-Key is still in flight."""


class PreconditionFailedError(APIError):
    """412: If-Match did not match the current version."""


class PayloadTooLargeError(APIError):
    """413: the body is over the service's limit."""


class UnprocessableError(APIError):
    """422: well-formed but refused, e.g. an Idempotency-Key reused with another request."""


class RateLimitError(APIError):
    """429 after the retries were spent; `retry_after` says how long the service asked to wait."""

    @property
    def retry_after(self) -> float | None:
        from engram_client._transport import parse_retry_after

        return parse_retry_after(self.response.headers.get("Retry-After"))


class ServerError(APIError):
    """5xx after the retries were spent."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    412: PreconditionFailedError,
    413: PayloadTooLargeError,
    422: UnprocessableError,
    429: RateLimitError,
}


def error_for(response: httpx.Response) -> APIError:
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    cls = _BY_STATUS.get(response.status_code)
    if cls is None:
        cls = ServerError if response.status_code >= 500 else APIError
    return cls(response, body)
