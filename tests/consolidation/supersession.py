"""The idiom of the supersession tests (issue 42), said once: a pair of statements written through the public
API in two ended sessions (`bench.update_pairs.probe_said`), then what the active facts hold; and a sentence
read offline by the extractor, then the values its facts hold."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import pytest

from bench.update_pairs import Said, kind_id, probe_said
from consolidation.extractors.rules import Found, extract_with_disclosures

T = TypeVar("T", bound=Callable[..., Any])


def said_pairs(pairs: Sequence[Said]) -> Callable[[T], T]:
    """The marks of a test that writes each pair through the API with the real MiniLM: the database, the
    model, one test per pair named by its kind."""

    def mark(test: T) -> T:
        marked = pytest.mark.parametrize("pair", pairs, ids=kind_id)(test)
        return pytest.mark.django_db(pytest.mark.usefixtures("minilm")(marked))

    return mark


def assert_updated(client: Any, end_session: Callable[[str], None], pair: Said, subject: str) -> None:
    """The second statement closed the first value: an active fact holds the new value, none the old."""
    outcome = probe_said(client, pair, subject, end_session)
    assert outcome.updated, outcome.describe()


def assert_closed(client: Any, end_session: Callable[[str], None], pair: Said, subject: str) -> None:
    """The first statement's value was read, and the second closed it: updated, and not only because the
    first value was never read."""
    outcome = probe_said(client, pair, subject, end_session)
    assert outcome.closed, outcome.describe()


def assert_kept(client: Any, end_session: Callable[[str], None], pair: Said, subject: str) -> None:
    """The second statement left the first value alone: an active fact still holds it."""
    outcome = probe_said(client, pair, subject, end_session)
    assert outcome.kept, outcome.describe()


def sentence_cases(cases: Sequence[tuple[str, ...]], names: tuple[str, ...] = ("sentence", "value")) -> Any:
    """One test per sentence, named by the sentence."""
    return pytest.mark.parametrize(names, cases, ids=[c[0] for c in cases])


def read(sentence: str, subject: str, said_at: datetime) -> list[Found]:
    return extract_with_disclosures(sentence, subject, said_at)


def shown(facts: Sequence[Found]) -> list[tuple[str, str, str]]:
    return [(f.attribute, f.value, f.statement) for f in facts]


def assert_value_held(
    sentence: str, value: str, *, subject: str, said_at: datetime, also: Callable[[Found], bool] | None = None
) -> None:
    """A fact read from the sentence holds exactly `value` (and passes `also`, when given)."""
    facts = read(sentence, subject, said_at)
    assert any(f.value == value and (also is None or also(f)) for f in facts), shown(facts)


def assert_no_value_held(
    sentence: str, value: str, *, subject: str, said_at: datetime, held: Callable[[str, str], bool] | None = None
) -> None:
    """No fact read from the sentence holds `value` (`held(fact_value, value)`; equality by default)."""
    facts = read(sentence, subject, said_at)
    matches = held or (lambda fact_value, v: fact_value == v)
    assert not [f for f in facts if matches(f.value, value)], shown(facts)


def said_by(subject: str) -> Callable[[Found], bool]:
    """An `also` for `supersession_tests`: the fact's statement is the subject's own."""
    return lambda fact: fact.statement.startswith(subject)


def supersession_tests(
    *,
    subject: str,
    said_at: datetime,
    closed: Sequence[Said],
    kept: Sequence[Said],
    values: Sequence[tuple[str, str]],
    no_values: Sequence[tuple[str, str]],
    updated_only: bool = False,
    also: Callable[[Found], bool] | None = None,
    held: Callable[[str, str], bool] | None = None,
) -> tuple[Callable[..., None], Callable[..., None], Callable[..., None], Callable[..., None]]:
    """The four tests of a module of pairs and sentences, to bind to its own test names: each pair of
    `closed` closes the value read before (with `updated_only`, only holds the new value and not the old:
    modules written before a first value had to be read), each of `kept` keeps it, each sentence of
    `values` gives a fact holding exactly its value (and passing `also`), none of `no_values` one holding
    its value (`held`, as `assert_no_value_held` reads it)."""
    check = assert_updated if updated_only else assert_closed

    @said_pairs(closed)
    def closes(api_a: Any, end_session: Callable[[str], None], pair: Said) -> None:
        check(api_a, end_session, pair, subject)

    @said_pairs(kept)
    def keeps(api_a: Any, end_session: Callable[[str], None], pair: Said) -> None:
        assert_kept(api_a, end_session, pair, subject)

    @sentence_cases(values)
    def holds(sentence: str, value: str) -> None:
        assert_value_held(sentence, value, subject=subject, said_at=said_at, also=also)

    @sentence_cases(no_values)
    def holds_none(sentence: str, value: str) -> None:
        assert_no_value_held(sentence, value, subject=subject, said_at=said_at, held=held)

    return closes, keeps, holds, holds_none
