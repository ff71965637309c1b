"""The deterministic entity and topic extractor, and term normalisation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from episodic.extraction import RuleExtractor, extract_entities_topics, normalise_terms
from tenants.models import TenantSettings

pytestmark = pytest.mark.django_db

CONFIG = TenantSettings(
    entity_dictionary=["postgres", "Acme Cloud"], topic_dictionary={"billing": ["invoice", "refund", "charge"]}
)


@pytest.mark.parametrize(
    ("text", "entities", "topics"),
    [
        ("Hey Mel! I went to the LGBTQ support group yesterday.", ["mel", "lgbtq"], []),
        (
            "The refund for order #12345 is late; Caroline said Acme Cloud runs Postgres.",
            ["acme cloud", "postgres", "order-12345", "caroline"],
            ["billing"],
        ),
        ("Ticket 98765 and INC-0042 were merged.", ["ticket-98765", "inc-0042"], []),
        (
            "Thanks Caroline! The Hague is nice in May. I love #hiking with John Smith.",
            ["caroline", "hague", "john smith"],
            ["hiking"],
        ),
        ("See #4567 for the charge.", ["#4567"], ["billing"]),
        ("what did you think of new york?", [], []),
        ("", [], []),
    ],
)
def test_rule_extractor(text, entities, topics) -> None:
    assert RuleExtractor().extract(text, CONFIG) == (entities, topics)


def test_tenant_settings_are_used(tenant_a) -> None:
    tenant_a.settings = {"entity_dictionary": ["kubernetes"], "topic_dictionary": {"infra": ["cluster"]}}
    assert extract_entities_topics(tenant=tenant_a, text="the Kubernetes cluster is down") == (
        ["kubernetes"],
        ["infra"],
    )


@given(st.lists(st.text(max_size=20), max_size=20))
def test_normalised_terms_are_lower_trimmed_unique_and_stable(values) -> None:
    terms = normalise_terms(values, max_chars=10)
    assert len(terms) == len(set(terms))
    for term in terms:
        assert term == term.strip()
        assert term == term.lower()
        assert term and len(term) <= 10
        assert "  " not in term
    assert normalise_terms(terms, max_chars=10) == terms
