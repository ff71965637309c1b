"""'We moved to X': a place is where the speaker lives; a product or a version is a migration (issue 30:
"We moved to PostgreSQL 16." was stored as location = PostgreSQL 16, "lives in PostgreSQL 16")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from consolidation.extractors.rules import extract_with_disclosures

SAID_AT = datetime(2025, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("sentence", "attribute", "value"),
    [
        ("We moved to PostgreSQL 16.", "database", "PostgreSQL 16"),
        ("We moved to Kubernetes.", "orchestration", "Kubernetes"),
        ("We moved to Python 3.12.", "uses", "Python 3.12"),
        ("We moved to the Enterprise plan.", "uses", "Enterprise plan"),
        ("We switched from MySQL 8.0 to MySQL 8.4.", "database", "MySQL 8.4"),
        ("I moved to Porto in the spring.", "location", "Porto"),
        ("We just moved to New York City.", "location", "New York City"),
        ("I moved to 42 Baker Street.", "location", "42 Baker Street"),
    ],
)
def test_moved_to_a_place_or_to_a_product(sentence: str, attribute: str, value: str) -> None:
    found = [(f.attribute, f.value) for f in extract_with_disclosures(sentence, "Ana", SAID_AT)]
    assert found == [(attribute, value)]
