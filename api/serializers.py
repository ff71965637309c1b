"""The one rule for request bodies: a field the serializer does not know, or a value of the wrong JSON
type, is a 400 naming it by JSON pointer. DRF alone drops unknown fields and coerces: `true` becomes
1.0 and "0.5" becomes 0.5 in a FloatField, `5` becomes "5" in a CharField, "yes" becomes true in a
BooleanField."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

_NUMBER_FIELDS = (serializers.IntegerField, serializers.FloatField, serializers.DecimalField)


def _type_errors(field: serializers.Field, value: Any) -> Any:
    """The errors of `value` against `field`'s JSON type (nested like DRF's own), or None."""
    if value is None:
        return None
    if isinstance(field, _NUMBER_FIELDS) and isinstance(value, bool):
        return ["A number is required, not a boolean."]
    if isinstance(field, _NUMBER_FIELDS) and not isinstance(value, (int, float)):
        return [f"A number is required, not {_json_type(value)}."]
    if isinstance(field, serializers.BooleanField) and not isinstance(value, bool):
        return ["Must be true or false."]
    if isinstance(field, serializers.CharField) and not isinstance(value, str):
        return ["Not a valid string."]
    if isinstance(field, serializers.ListField) and isinstance(value, list):
        nested = {i: errors for i, item in enumerate(value) if (errors := _type_errors(field.child, item))}
        return nested or None
    if isinstance(field, serializers.DictField) and isinstance(value, dict):
        nested = {k: errors for k, item in value.items() if (errors := _type_errors(field.child, item))}
        return nested or None
    return None


def _json_type(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a " + type(value).__name__


class StrictSerializer(serializers.Serializer):
    """Refuses the fields it does not know, naming them, instead of dropping them; with `check_types`,
    also JSON values of the wrong type."""

    check_types = False

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            errors: dict[str, Any] = {name: ["Unknown field."] for name in sorted(set(data) - set(self.fields))}
            if self.check_types:
                for name, field in self.fields.items():
                    if name in data and not field.read_only and (found := _type_errors(field, data[name])):
                        errors[name] = found
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class BodySerializer(StrictSerializer):
    """Base of every request-body serializer of /v1/. Query-string filters that refuse unknown names use
    StrictSerializer: every query value is a string, so they leave types to the fields."""

    check_types = True


SUBJECT_MAX = 255


class IdField(serializers.CharField):
    """An id the tenant names (a session, an agent) exactly as written: never trimmed, folded or
    normalised, so that the id a write stored is the id its routes and filters find (DESIGN.md
    invariant 12); at most SUBJECT_MAX characters. An id of whitespace only names nothing and is
    refused (with `allow_blank`, "" is "none")."""

    default_error_messages = {"whitespace": "An id must hold a character other than whitespace."}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", SUBJECT_MAX)
        kwargs["trim_whitespace"] = False
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        value = str(super().to_internal_value(data))
        if value and not value.strip():
            self.fail("whitespace")
        return value


class SubjectField(IdField):
    """A subject id exactly as the tenant wrote it: " carol" and "carol" are two subjects."""

    default_error_messages = {"whitespace": "A subject id must hold a character other than whitespace."}
