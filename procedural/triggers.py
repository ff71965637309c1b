"""Procedure triggers: a strict schema, its validation, and matching against what is happening now.

A trigger is a JSON object with any of these conditions (unknown fields are refused):

    {"keywords": ["rate limit"], "regexes": ["(?i)\\bHTTP 429\\b"],
     "tools": [{"name": "billing_api", "status": [429, "5xx"]}],
     "entities": ["stripe"], "topics": ["billing"], "session_kinds": ["support"],
     "description": "An API tool answered 429 Too Many Requests"}

`description` is the natural-language side, embedded for semantic matching (stored as
`Procedure.trigger_text`, not in the conditions). A trigger matches when ANY condition does; each kind
of condition adds its own strength (WEIGHTS), combined as a noisy-or, so a rule matched by a tool
event and a keyword is a stronger match than one matched by a keyword alone.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from core.errors import ValidationProblem
from procedural.regexes import MATCH_TIMEOUT_SECONDS, UnsafePattern, regex_check, regex_search

CONDITION_FIELDS = ("keywords", "regexes", "tools", "entities", "topics", "session_kinds")
TRIGGER_FIELDS = (*CONDITION_FIELDS, "description")
TOOL_FIELDS = ("name", "status")
MAX_ITEMS = {"keywords": 50, "regexes": 10, "tools": 20, "entities": 50, "topics": 50, "session_kinds": 20}
MAX_ITEM_CHARS = 100
MAX_DESCRIPTION_CHARS = 1_000
MAX_STATUSES = 10
# How much each kind of condition says about the situation, when it matches.
WEIGHTS = {
    "tools": 0.9,
    "regexes": 0.75,
    "keywords": 0.6,
    "entities": 0.5,
    "topics": 0.4,
    "session_kinds": 0.3,
}
SEMANTIC_WEIGHT = 0.7
# All regexes of one match request share this much time; a pattern that runs out counts as no match.
REGEX_BUDGET_SECONDS = 0.03

_STATUS_CODE = re.compile(r"^[1-5][0-9][0-9]$")
_STATUS_CLASS = re.compile(r"^[1-5]xx$")
_STATUS_WORD = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.:/-]{1,100}\*?$")
_ERROR_WORDS = frozenset({"error", "failed", "failure", "timeout", "exception"})
_OK_WORDS = frozenset({"ok", "success", "succeeded"})


@dataclass(frozen=True)
class ToolCondition:
    name: str = ""  # exact tool name (case-insensitive), a prefix ending in "*", or "" for any tool
    statuses: tuple[str, ...] = ()  # "429", "4xx", "error", ...; empty for any status

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.name:
            out["name"] = self.name
        if self.statuses:
            out["status"] = [int(s) if s.isdigit() else s for s in self.statuses]
        return out

    def matches(self, event: ToolEvent) -> bool:
        return self._name_matches(event.name) and self._status_matches(event.status)

    def _name_matches(self, name: str) -> bool:
        if not self.name:
            return True
        wanted = self.name.lower()
        if wanted.endswith("*"):
            return name.startswith(wanted[:-1])
        return name == wanted

    def _status_matches(self, status: str) -> bool:
        if not self.statuses:
            return True
        return any(status_matches(wanted, status) for wanted in self.statuses)

    def describe(self) -> str:
        who = f'tool "{self.name}"' if self.name else "a tool"
        if not self.statuses:
            return f"{who} was used"
        return f"{who} returned {' or '.join(self.statuses)}"


@dataclass(frozen=True)
class Trigger:
    keywords: tuple[str, ...] = ()
    regexes: tuple[str, ...] = ()
    tools: tuple[ToolCondition, ...] = ()
    entities: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    session_kinds: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in CONDITION_FIELDS:
            value = getattr(self, name)
            if value:
                out[name] = [t.to_json() for t in value] if name == "tools" else list(value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trigger:
        """A trigger from storage, which holds only what `trigger_parse` accepted."""
        return cls(
            keywords=tuple(data.get("keywords", ())),
            regexes=tuple(data.get("regexes", ())),
            tools=tuple(
                ToolCondition(name=t.get("name", ""), statuses=tuple(_status_key(s) for s in t.get("status", ())))
                for t in data.get("tools", ())
            ),
            entities=tuple(data.get("entities", ())),
            topics=tuple(data.get("topics", ())),
            session_kinds=tuple(data.get("session_kinds", ())),
        )

    def is_empty(self) -> bool:
        return not any(getattr(self, name) for name in CONDITION_FIELDS)


@dataclass(frozen=True)
class ToolEvent:
    name: str  # lower-cased
    status: str  # "429", "error", "ok", ... or "" when unknown


def _status_key(value: Any) -> str:
    if isinstance(value, bool):
        return "ok" if value else "error"
    if isinstance(value, int):
        return str(value)
    return str(value).strip().lower()


def status_matches(wanted: str, status: str) -> bool:
    """`wanted` is a condition's status: a code ("429"), a class ("4xx"), or a word; "error" also
    takes any code from 400 up, "ok" any 2xx."""
    if not status:
        return False
    if wanted == status:
        return True
    if _STATUS_CLASS.match(wanted):
        return bool(_STATUS_CODE.match(status)) and status[0] == wanted[0]
    if wanted == "error":
        return status in _ERROR_WORDS or (bool(_STATUS_CODE.match(status)) and int(status) >= 400)
    if wanted == "ok":
        return status in _OK_WORDS or (bool(_STATUS_CODE.match(status)) and status[0] == "2")
    return False


def tool_event_normalise(event: Mapping[str, Any]) -> ToolEvent | None:
    """A tool event in either shape callers send: `{"name": "billing_api", "status": 429}`, or an
    episode `{"kind": "tool_result", "payload": {"tool": "billing_api", "status_code": 429}}`.
    The name comes from name/tool/tool_name, the status from status/status_code/http_status (or
    `ok`/`error` keys), at the top level or in `payload`. None when no tool name can be found."""
    payload = event.get("payload")
    sources: list[Mapping[str, Any]] = [event]
    if isinstance(payload, Mapping):
        sources.append(payload)
    name = ""
    status = ""
    for source in sources:
        for key in ("name", "tool", "tool_name"):
            value = source.get(key)
            if not name and isinstance(value, str) and value.strip():
                name = value.strip().lower()[:MAX_ITEM_CHARS]
        for key in ("status", "status_code", "http_status"):
            value = source.get(key)
            if not status and isinstance(value, (int, str)) and not isinstance(value, bool) and str(value).strip():
                status = _status_key(value)[:32]
        if not status and source.get("error"):
            status = "error"
        if not status and isinstance(source.get("ok"), bool):
            status = _status_key(source["ok"])
    if not name:
        return None
    return ToolEvent(name=name, status=status)


class _Errors:
    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []

    def add(self, pointer: str, detail: str) -> None:
        self.items.append({"pointer": pointer, "detail": detail})


def _strings(value: Any, at: str, name: str, errors: _Errors, *, lower: bool) -> tuple[str, ...]:
    if not isinstance(value, list):
        errors.add(at, "Must be a list of strings.")
        return ()
    if len(value) > MAX_ITEMS[name]:
        errors.add(at, f"At most {MAX_ITEMS[name]} items.")
        return ()
    out: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            errors.add(f"{at}/{index}", "Must be a non-empty string.")
            continue
        if len(item) > (MAX_ITEM_CHARS * 2 if name == "regexes" else MAX_ITEM_CHARS):
            errors.add(f"{at}/{index}", f"At most {MAX_ITEM_CHARS} characters.")
            continue
        text = item if name == "regexes" else " ".join(item.split())
        if name == "keywords" and not _WORD.search(text):
            errors.add(f"{at}/{index}", "A keyword needs at least one letter or digit (matching is by whole words).")
            continue
        out.append(text.lower() if lower else text)
    return tuple(dict.fromkeys(out))


def _tools(value: Any, at: str, errors: _Errors) -> tuple[ToolCondition, ...]:
    if not isinstance(value, list):
        errors.add(at, 'Must be a list of objects like {"name": "billing_api", "status": [429]}.')
        return ()
    if len(value) > MAX_ITEMS["tools"]:
        errors.add(at, f"At most {MAX_ITEMS['tools']} items.")
        return ()
    out: list[ToolCondition] = []
    for index, item in enumerate(value):
        here = f"{at}/{index}"
        before = len(errors.items)
        if not isinstance(item, dict):
            errors.add(here, "Must be an object with name and/or status.")
            continue
        for key in item:
            if key not in TOOL_FIELDS:
                errors.add(f"{here}/{key}", f"Unknown field; a tool condition has only {', '.join(TOOL_FIELDS)}.")
        name = item.get("name", "")
        if name is None:
            name = ""
        if not isinstance(name, str) or (name and not _TOOL_NAME.match(name)):
            errors.add(f"{here}/name", "A tool name: letters, digits, _ . : / -, optionally ending in * (prefix).")
            name = ""
        raw_statuses = item.get("status", [])
        if isinstance(raw_statuses, (int, str)) and not isinstance(raw_statuses, bool):
            raw_statuses = [raw_statuses]
        statuses: list[str] = []
        if not isinstance(raw_statuses, list) or len(raw_statuses) > MAX_STATUSES:
            errors.add(f"{here}/status", f"A status or a list of at most {MAX_STATUSES}.")
        else:
            for s_index, status in enumerate(raw_statuses):
                key = _status_key(status) if isinstance(status, (int, str)) and not isinstance(status, bool) else ""
                if not (_STATUS_CODE.match(key) or _STATUS_CLASS.match(key) or _STATUS_WORD.match(key)):
                    errors.add(
                        f"{here}/status/{s_index}",
                        'An HTTP status (429), a class ("5xx") or a word ("error", "timeout").',
                    )
                    continue
                statuses.append(key)
        if not name and not statuses:
            if len(errors.items) == before:
                errors.add(here, "A tool condition needs a name, a status, or both.")
            continue
        out.append(ToolCondition(name=name.lower(), statuses=tuple(dict.fromkeys(statuses))))
    return tuple(dict.fromkeys(out))


def trigger_parse(data: Any, *, pointer: str = "/trigger", require_condition: bool = True) -> tuple[Trigger, str]:
    """Validate a trigger object from a request: (the conditions, the description). Raises one
    ValidationProblem naming every bad field by its JSON pointer."""
    errors = _Errors()
    if not isinstance(data, dict):
        raise ValidationProblem.at(pointer, "A trigger is a JSON object.")
    for key in data:
        if key not in TRIGGER_FIELDS:
            errors.add(f"{pointer}/{key}", f"Unknown field; a trigger has only {', '.join(TRIGGER_FIELDS)}.")
    values: dict[str, Any] = {}
    for name in ("keywords", "entities", "topics", "session_kinds"):
        if name in data:
            values[name] = _strings(data[name], f"{pointer}/{name}", name, errors, lower=True)
    if "regexes" in data:
        patterns = _strings(data["regexes"], f"{pointer}/regexes", "regexes", errors, lower=False)
        for index, pattern in enumerate(patterns):
            try:
                regex_check(pattern)
            except UnsafePattern as exc:
                errors.add(f"{pointer}/regexes/{index}", f"Refused: {exc}")
        values["regexes"] = patterns
    if "tools" in data:
        values["tools"] = _tools(data["tools"], f"{pointer}/tools", errors)
    description = data.get("description", "")
    if description is None:
        description = ""
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_CHARS:
        errors.add(f"{pointer}/description", f"A string of at most {MAX_DESCRIPTION_CHARS} characters.")
        description = ""
    trigger = Trigger(**values)
    if not errors.items and require_condition and trigger.is_empty() and not description.strip():
        errors.add(pointer, "A trigger needs at least one condition or a description.")
    if errors.items:
        detail = "; ".join(f"{e['pointer']}: {e['detail']}" for e in errors.items[:5])
        raise ValidationProblem(detail, errors=errors.items)
    return trigger, description.strip()


@dataclass
class Situation:
    """What is happening now, normalised once per match request."""

    message: str = ""
    tool_events: tuple[ToolEvent, ...] = ()
    entities: frozenset[str] = frozenset()
    topics: frozenset[str] = frozenset()
    session_kind: str = ""
    regex_seconds_spent: float = 0.0
    regex_timeouts: list[str] = field(default_factory=list)
    _folded: str = ""

    @classmethod
    def build(
        cls,
        *,
        message: str,
        tool_events: Iterable[Mapping[str, Any]],
        entities: Sequence[str],
        topics: Sequence[str],
        session_kind: str,
    ) -> Situation:
        events = tuple(e for e in (tool_event_normalise(ev) for ev in tool_events if isinstance(ev, Mapping)) if e)
        return cls(
            message=message,
            tool_events=events,
            entities=frozenset(" ".join(e.split()).lower() for e in entities if isinstance(e, str)),
            topics=frozenset(" ".join(t.split()).lower() for t in topics if isinstance(t, str)),
            session_kind=session_kind.strip().lower(),
            _folded=f" {' '.join(_WORD.findall(message.lower()))} ",
        )

    def keyword_in_message(self, keyword: str) -> bool:
        # Whole words only ("log" is not in "login"): both sides are reduced to their words, padded.
        words = _keyword_words(keyword)
        return bool(words) and words in self._folded

    def regex_matches(self, pattern: str) -> bool:
        # The budget counts time spent in regexes only, so many cheap rules evaluated before this one
        # (or a busy machine between calls) do not starve it.
        remaining = REGEX_BUDGET_SECONDS - self.regex_seconds_spent
        if remaining <= 0:
            self.regex_timeouts.append(pattern)
            return False
        started = time.perf_counter()
        result = regex_search(pattern, self.message, timeout=min(MATCH_TIMEOUT_SECONDS, remaining))
        self.regex_seconds_spent += time.perf_counter() - started
        if result is None:
            self.regex_timeouts.append(pattern)
        return bool(result)


_WORD = re.compile(r"\w+")


@lru_cache(maxsize=10_000)
def _keyword_words(keyword: str) -> str:
    words = _WORD.findall(keyword.lower())
    return f" {' '.join(words)} " if words else ""


@lru_cache(maxsize=8_192)
def trigger_from_text(text: str) -> Trigger:
    """A stored trigger from its JSON text. Cached: a procedure row's trigger never changes (an edit
    is a new row), and the same text always parses to the same trigger."""
    return Trigger.from_json(json.loads(text))


@dataclass(frozen=True)
class ConditionHit:
    kind: str  # a CONDITION_FIELDS name, or "semantic"
    strength: float
    why: str


def trigger_evaluate(trigger: Trigger, situation: Situation) -> list[ConditionHit]:
    """The conditions of the trigger that hold now, one hit per kind of condition."""
    hits: list[ConditionHit] = []
    tool_hits = [
        f"{condition.describe()} ({event.name} → {event.status or 'no status'})"
        for condition in trigger.tools
        for event in situation.tool_events
        if condition.matches(event)
    ]
    if tool_hits:
        hits.append(ConditionHit("tools", WEIGHTS["tools"], "; ".join(dict.fromkeys(tool_hits))))
    if situation.message:
        matched_regexes = [p for p in trigger.regexes if situation.regex_matches(p)]
        if matched_regexes:
            listed = ", ".join(f"/{p}/" for p in matched_regexes)
            hits.append(ConditionHit("regexes", WEIGHTS["regexes"], f"message matches {listed}"))
        matched_keywords = [k for k in trigger.keywords if situation.keyword_in_message(k)]
        if matched_keywords:
            listed = ", ".join(f'"{k}"' for k in matched_keywords)
            hits.append(ConditionHit("keywords", WEIGHTS["keywords"], f"message mentions {listed}"))
    for kind, present, label in (
        ("entities", situation.entities, "entity"),
        ("topics", situation.topics, "topic"),
    ):
        shared = [v for v in getattr(trigger, kind) if v in present]
        if shared:
            listed = ", ".join(f'"{v}"' for v in shared)
            hits.append(ConditionHit(kind, WEIGHTS[kind], f"{label} {listed}"))
    if situation.session_kind and situation.session_kind in trigger.session_kinds:
        hits.append(ConditionHit("session_kinds", WEIGHTS["session_kinds"], f'session kind "{situation.session_kind}"'))
    return hits


def combine(strengths: Iterable[float]) -> float:
    """Noisy-or: independent pieces of evidence that the rule applies."""
    miss = 1.0
    for s in strengths:
        miss *= 1.0 - max(0.0, min(1.0, s))
    return 1.0 - miss
