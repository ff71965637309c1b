"""Confidence from outcomes: Wilson bounds with a documented prior, and the deprecation verdict."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from procedural.confidence import PRIORS, confidence_for, deprecation_verdict, wilson_interval

counts = st.integers(min_value=0, max_value=500)


@given(counts, counts)
def test_the_interval_holds_the_observed_rate(successes: int, failures: int) -> None:
    trials = successes + failures
    low, high = wilson_interval(successes, trials)
    assert 0.0 <= low <= high <= 1.0
    if trials:
        assert low - 1e-9 <= successes / trials <= high + 1e-9


@given(counts, counts)
def test_a_success_raises_confidence_and_a_failure_lowers_it(successes: int, failures: int) -> None:
    for source in PRIORS:
        now = confidence_for(source=source, successes=successes, failures=failures)
        assert confidence_for(source=source, successes=successes + 1, failures=failures) > now
        lower = confidence_for(source=source, successes=successes, failures=failures + 1)
        # Confidence is stored to 6 decimals: near zero one more failure can round to the same value.
        assert lower < now or (lower == now and now < 1e-3)


@given(st.integers(min_value=1, max_value=200))
def test_more_evidence_at_the_same_rate_narrows_the_interval(n: int) -> None:
    narrow = wilson_interval(2 * n, 4 * n)
    wide = wilson_interval(n, 2 * n)
    assert narrow[0] >= wide[0] and narrow[1] <= wide[1]


def test_the_prior_of_a_new_rule_is_documented_and_ordered() -> None:
    instruction = confidence_for(source="instruction", successes=0, failures=0)
    experience = confidence_for(source="experience", successes=0, failures=0)
    fine_tuning = confidence_for(source="fine_tuning", successes=0, failures=0)
    assert round(instruction, 2) == 0.36  # the figure docs/procedural.md and the module docstring give
    assert instruction > experience > fine_tuning > 0


def test_deprecation_needs_enough_applications_and_a_low_upper_bound() -> None:
    assert not deprecation_verdict(successes=0, failures=9, min_applications=10, threshold=0.4).due
    assert deprecation_verdict(successes=0, failures=10, min_applications=10, threshold=0.4).due
    assert deprecation_verdict(successes=1, failures=9, min_applications=10, threshold=0.4).due
    verdict = deprecation_verdict(successes=2, failures=8, min_applications=10, threshold=0.4)
    assert not verdict.due and verdict.upper > 0.4
    assert verdict.figures()["applications"] == 10


@given(counts, counts, st.integers(min_value=1, max_value=50), st.floats(min_value=0.05, max_value=0.95))
def test_deprecation_is_never_due_below_the_minimum(
    successes: int, failures: int, minimum: int, threshold: float
) -> None:
    verdict = deprecation_verdict(successes=successes, failures=failures, min_applications=minimum, threshold=threshold)
    if successes + failures < minimum:
        assert not verdict.due
    if verdict.due:
        assert verdict.upper < threshold
