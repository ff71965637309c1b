"""core.db.array_literal: arrays bound as their text form, only for values that need no quoting."""

from __future__ import annotations

import math
import uuid

import pytest
from django.db import connection

from core.db import array_literal


@pytest.mark.django_db
def test_numbers_and_uuids_read_back_as_the_same_arrays() -> None:
    ids = [1, 2**62, -5]
    scores = [0.1, 1e-30, -2.5, 3.0]
    keys = [uuid.uuid4(), uuid.uuid4()]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT %s::bigint[], %s::float8[], %s::uuid[], %s::bigint[]",
            [array_literal(ids), array_literal(scores), array_literal(keys), array_literal([])],
        )
        row = cursor.fetchone()
    assert row == (ids, scores, keys, [])


@pytest.mark.parametrize("value", ["1", "1}'; DROP TABLE x; --", None, True, math.nan, math.inf, b"1"])
def test_anything_but_a_finite_number_or_a_uuid_is_refused(value: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        array_literal([1, value])  # type: ignore[list-item]
