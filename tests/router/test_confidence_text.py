"""The context states a fact's and a procedure's confidence as stored, to two decimals: 0.96 is not
"confidence 1.0"."""

from __future__ import annotations

import pytest

from procedural.models import Procedure
from router.candidates.procedural import procedure_text
from tests.router.conftest import believe

pytestmark = pytest.mark.django_db


def test_a_facts_confidence_is_not_rounded_up_to_certainty(tenant_a, ask) -> None:
    believe(tenant_a, attribute="city", value="Lisbon", statement="Alice lives in Lisbon.", confidence=0.96)
    body = ask(query="where does Alice live?", max_tokens=2000)
    line = next(i["text"] for i in body["layers"]["semantic"] if "Lisbon" in i["text"])
    assert "confidence 0.96" in line and "confidence 1.0" not in body["prompt"]


def test_a_procedures_confidence_keeps_two_decimals() -> None:
    text = procedure_text(Procedure(name="refunds", behaviour="Ask for the order id.", steps=[]), 0.96)
    assert text.endswith("(confidence 0.96)")
