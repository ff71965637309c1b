"""Domain errors. Services raise these; one exception handler renders them as problem+json."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    status = 400
    title = "Bad request"
    type_slug = "bad-request"

    def __init__(self, detail: str, *, errors: list[dict[str, Any]] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []
        self.extra = extra


class ValidationProblem(DomainError):
    """Bad input. `errors` holds {pointer, detail} items with JSON pointers into the request body."""

    status = 400
    title = "Invalid request"
    type_slug = "validation-error"

    @classmethod
    def at(cls, pointer: str, detail: str) -> ValidationProblem:
        return cls(detail, errors=[{"pointer": pointer, "detail": detail}])


class NotFound(DomainError):
    """Missing, or another tenant's: the two are never told apart."""

    status = 404
    title = "Not found"
    type_slug = "not-found"


class Conflict(DomainError):
    status = 409
    title = "Conflict"
    type_slug = "conflict"


class PreconditionFailed(DomainError):
    status = 412
    title = "Precondition failed"
    type_slug = "precondition-failed"


class PayloadTooLarge(DomainError):
    status = 413
    title = "Payload too large"
    type_slug = "payload-too-large"


class Unprocessable(DomainError):
    status = 422
    title = "Unprocessable request"
    type_slug = "unprocessable"
