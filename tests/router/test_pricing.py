"""The prompt's tokens from its lines' counts (router.pricing): exact against tiktoken, and the prompt
is not run through the tokeniser again."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import tokens
from core.tokens import count_tokens
from router.budgets import budget_plan
from router.packing import assemble
from router.pricing import joined_tokens
from router.rendering import render_layer
from router.types import LAYERS, LayerCandidates
from tenants.models import TenantSettings
from tests.router.test_packing import _episode, _flat

# Ends that cl100k treats differently: punctuation (which takes the newlines after it), digits, letters,
# spaces (one, several, unicode ones), newlines inside, apostrophes.
texts = st.text(
    alphabet=st.sampled_from(list("ab cd\u00a0\u2003 ef.,!?:;'…\"()-#<>0123456789\nÜé€\t")), min_size=0, max_size=60
)
# What a joined text begins with: a list marker, a header, a tag, a block header.
starts = st.sampled_from(["- ", "## ", "### ", "<", "</", "["])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(st.tuples(starts, texts).map("".join), min_size=1, max_size=8),
    separator=st.sampled_from(["\n", "\n\n"]),
)
def test_joined_texts_count_what_the_tokeniser_counts(pieces: list[str], separator: str) -> None:
    assert joined_tokens([(p, count_tokens(p)) for p in pieces], separator) == count_tokens(separator.join(pieces))


def test_the_prompt_is_counted_from_its_lines_not_encoded_again(monkeypatch: pytest.MonkeyPatch) -> None:
    unique = uuid.uuid4().hex
    store = LayerCandidates()
    store.semantic = [_flat("semantic", i, f"Fact {i} of {unique}: it ends with a full stop.", 1.0) for i in range(3)]
    store.episodic = [
        _episode(10 + i, f"line {i} of {unique}, asking why?", 0.5, "Relevant history", i % 2, "s-1") for i in range(6)
    ]
    store.working = [_flat("working", 20, f"plan: {unique}", 1.0)]
    plan = budget_plan(config=TenantSettings(), max_tokens=4000, overrides={}, layers=LAYERS)
    real = tokens.encoding()
    encoded: list[str] = []

    class Spy:
        def encode(self, text: str, **kwargs: Any) -> list[int]:
            encoded.append(text)
            return real.encode(text, **kwargs)

    monkeypatch.setattr(tokens, "encoding", lambda: Spy())
    built = assemble(offered=store, plan=plan, fmt="markdown")
    assert built.prompt.count(unique) == 10
    assert built.tokens["total"] == len(real.encode(built.prompt))
    for layer in LAYERS:
        assert built.tokens[layer] == len(real.encode(render_layer(layer, built.chosen[layer], "markdown")))
    # Each line was counted (once); neither a layer's text nor the prompt was.
    layer_texts = {render_layer(layer, built.chosen[layer], "markdown") for layer in LAYERS} - {""}
    assert built.prompt not in encoded and not layer_texts & set(encoded)
