"""Timestamps read through plain SQL as microseconds since the epoch. psycopg's loader for timestamptz
runs in Python, once per value, and a context request reads hundreds of them (episode rows, fact
dates, sources); an integer costs next to nothing to load."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_us_sql(column: str) -> str:
    """The SQL for `column` (a timestamptz) as whole microseconds since the epoch."""
    return f"(extract(epoch FROM {column}) * 1000000)::bigint"


def from_epoch_us(microseconds: int) -> datetime:
    """An aware UTC datetime from epoch_us_sql's value."""
    return EPOCH + timedelta(microseconds=microseconds)


# Month names and their abbreviations as people write them, for the readers of dates in text.
MONTHS = {
    name: index
    for index, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
