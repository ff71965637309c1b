"""Tenant-written regular expressions, made safe to run on the request path.

Three guards, all needed, because Python's backtracking engines can take minutes on a 2,000-character
message for patterns as innocent-looking as `.*a.*b.*c` or `\\d+\\d+x`:

1. Static rules at write time (`regex_check`): at most MAX_PATTERN_CHARS characters; it must compile;
   no backreferences or conditionals; no repetition nested inside a repetition (`(a+)+`, `(\\w+\\s?)*`);
   no alternation inside a repetition (`(a|aa)*`); counted repeats at most MAX_COUNTED_REPEAT; at most
   MAX_UNBOUNDED_REPEATS unbounded quantifiers (`*`, `+`, `{n,}`) in the whole pattern.
2. A probe at write time: the pattern runs against adversarial inputs of the full input length built
   from its own characters (each repeated, then all of them cycled), under PROBE_TIMEOUT_SECONDS each;
   a pattern that needs longer is refused.
3. At match time the input is cut to MAX_INPUT_CHARS and the pattern runs under the `regex` engine's
   own timeout (MATCH_TIMEOUT_SECONDS); a pattern that runs out of time counts as not matching.
"""

from __future__ import annotations

import re
from functools import lru_cache
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import regex

MAX_PATTERN_CHARS = 200
MAX_COUNTED_REPEAT = 100
MAX_UNBOUNDED_REPEATS = 3
MAX_INPUT_CHARS = 2_000
MATCH_TIMEOUT_SECONDS = 0.01
PROBE_TIMEOUT_SECONDS = 0.02
_PROBE_ALPHABET_CAP = 12

_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)}
_FORBIDDEN = {sre_constants.GROUPREF: "backreferences", sre_constants.GROUPREF_EXISTS: "conditional groups"}
_CATEGORY_SAMPLES = {
    sre_constants.CATEGORY_DIGIT: "1",
    sre_constants.CATEGORY_NOT_DIGIT: "a",
    sre_constants.CATEGORY_WORD: "a",
    sre_constants.CATEGORY_NOT_WORD: " ",
    sre_constants.CATEGORY_SPACE: " ",
    sre_constants.CATEGORY_NOT_SPACE: "a",
}


class UnsafePattern(ValueError):
    """The pattern is invalid or could make matching slow; the message says why."""


def _walk(items: Any, *, inside_repeat: bool, found: dict[str, Any]) -> None:
    for op, av in items:
        if op in _FORBIDDEN:
            raise UnsafePattern(f"{_FORBIDDEN[op]} are not allowed.")
        if op in _REPEATS:
            low, high, body = av
            unbounded = high == sre_constants.MAXREPEAT
            if not unbounded and high > MAX_COUNTED_REPEAT:
                raise UnsafePattern(f"counted repeats are limited to {{0,{MAX_COUNTED_REPEAT}}}.")
            if unbounded:
                found["unbounded"] += 1
            if high > 1 and inside_repeat:
                raise UnsafePattern("a repetition inside a repetition (like (a+)+) can backtrack catastrophically.")
            _walk(body, inside_repeat=inside_repeat or high > 1, found=found)
        elif op == sre_constants.BRANCH:
            if inside_repeat:
                raise UnsafePattern("alternation inside a repetition (like (a|ab)*) can backtrack catastrophically.")
            for branch in av[1]:
                _walk(branch, inside_repeat=inside_repeat, found=found)
        elif op == sre_constants.SUBPATTERN:
            _walk(av[-1], inside_repeat=inside_repeat, found=found)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            _walk(av[1], inside_repeat=inside_repeat, found=found)
        elif getattr(sre_constants, "ATOMIC_GROUP", None) is not None and op == sre_constants.ATOMIC_GROUP:
            _walk(av, inside_repeat=inside_repeat, found=found)
        elif op == sre_constants.LITERAL:
            found["chars"].append(chr(av))
        elif op == sre_constants.IN:
            found["chars"].append(_class_sample(av))
        elif op == sre_constants.ANY:
            found["chars"].append("a")


def _class_sample(items: Any) -> str:
    for op, av in items:
        if op == sre_constants.LITERAL:
            return chr(av)
        if op == sre_constants.RANGE:
            return chr(av[0])
        if op == sre_constants.CATEGORY and av in _CATEGORY_SAMPLES:
            return _CATEGORY_SAMPLES[av]
    return "a"


def _probes(chars: list[str]) -> list[str]:
    alphabet = list(dict.fromkeys(chars))[:_PROBE_ALPHABET_CAP] or ["a"]
    probes = [(c * MAX_INPUT_CHARS)[: MAX_INPUT_CHARS - 1] + "\x00" for c in alphabet]
    cycle = "".join(alphabet)
    probes.append((cycle * (MAX_INPUT_CHARS // len(cycle) + 1))[: MAX_INPUT_CHARS - 1] + "\x00")
    return probes


def regex_check(pattern: str) -> None:
    """Raise UnsafePattern unless the pattern obeys the rules of this module (see the docstring)."""
    if not isinstance(pattern, str) or not pattern:
        raise UnsafePattern("a pattern is a non-empty string.")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UnsafePattern(f"a pattern is at most {MAX_PATTERN_CHARS} characters.")
    try:
        parsed = sre_parse.parse(pattern)
        re.compile(pattern)
        compiled = regex.compile(pattern)
    except (re.error, regex.error, RecursionError, OverflowError) as exc:
        raise UnsafePattern(f"not a valid regular expression: {exc}.") from exc
    found: dict[str, Any] = {"unbounded": 0, "chars": []}
    _walk(parsed, inside_repeat=False, found=found)
    if found["unbounded"] > MAX_UNBOUNDED_REPEATS:
        raise UnsafePattern(f"at most {MAX_UNBOUNDED_REPEATS} unbounded quantifiers (*, +, {{n,}}) per pattern.")
    for probe in _probes(found["chars"]):
        try:
            compiled.search(probe, timeout=PROBE_TIMEOUT_SECONDS)
        except TimeoutError as exc:
            raise UnsafePattern(f"too slow on adversarial input ({probe[:12]!r}…): it backtracks.") from exc


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> Any:
    return regex.compile(pattern)


def regex_search(pattern: str, text: str, *, timeout: float = MATCH_TIMEOUT_SECONDS) -> bool | None:
    """Whether a checked pattern matches somewhere in the first MAX_INPUT_CHARS of the text: True,
    False, or None when it ran out of time (callers count None as no match and report it)."""
    try:
        return _compiled(pattern).search(text[:MAX_INPUT_CHARS], timeout=timeout) is not None
    except TimeoutError:
        return None
