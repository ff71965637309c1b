"""The scripted support agent of the demo, and the replay that drives it through Engram's public API.

The agent needs named facts to answer (the current value of each, e.g. the user's database version).
It looks for them in what it can see: the current conversation and, with memory on, the context Engram
serves for the user's message. A fact it cannot see, it asks for; the user answers with the sentence
that states it. Everything is deterministic: the same script gives the same figures.

With memory on, the agent answers with what it was told: for each needed value the context holds, it
quotes the sentence that holds it (a fact first, then what the user said). Every turn is appended as
episodes, each context gets feedback (the items "used" are those its answer restates, as the client
decides it for any agent: `engram_client.used_item_ids`), procedures offered are credited with an
outcome, and each conversation is ended, which consolidates it into facts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from engram_client import EngramClient, NotFoundError, context_items, used_item_ids

from core.tokens import count_tokens
from demo.script import USERS, Conversation, FactSpec, UserScript

SYSTEM_PROMPT = (
    "You are the support agent of a developer platform. Answer with the customer's own setup in mind; "
    "if you do not know a detail you need, ask for it."
)
CONTEXT_TOKENS = 1500


@dataclasses.dataclass
class UserStats:
    subject: str
    conversations: int = 0
    model_calls: int = 0
    needed: int = 0  # facts the agent needed, over all questions
    asked: int = 0  # facts it had to ask for
    asked_known: int = 0  # ... that the user had already given in an earlier conversation
    tokens_sent: int = 0  # prompt tokens over all model calls (context + conversation)
    # Without memory: what the calls would cost if every earlier conversation were replayed into them.
    tokens_full_replay: int = 0
    offered: int = 0  # context items offered (memory on)
    used: int = 0  # ... and used: the items its answers cite or restate
    used_own: int = 0  # ... of which its own earlier answers
    told_before: int = 0  # needed values given in an earlier conversation and not in this one so far
    recalled: int = 0  # needed values not in this conversation that the context held: answered with them

    @property
    def recall_rate(self) -> float:
        return self.recalled / self.told_before if self.told_before else 0.0

    @property
    def hit_rate(self) -> float:
        return self.used / self.offered if self.offered else 0.0

    def add(self, other: UserStats) -> None:
        for field in dataclasses.fields(self):
            if field.name != "subject":
                setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))


def session_id(user: UserScript, index: int) -> str:
    return f"{user.subject}-{index + 1:02d}"


def _key(*parts: object) -> str:
    return "demo-" + hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:40]


@dataclasses.dataclass
class _Conversation:
    user: UserScript
    index: int
    conv: Conversation
    truth: dict[str, FactSpec]
    given: dict[str, str]
    given_before: dict[str, str]
    started: datetime
    transcript: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    stored: int = 0

    @property
    def session(self) -> str:
        return session_id(self.user, self.index)

    def at(self, n: int) -> datetime:
        return self.started + timedelta(minutes=2 * n)

    def say(self, role: str, text: str) -> None:
        self.transcript.append((role, text))

    def conversation_text(self) -> str:
        return "\n".join(f"{role}: {text}" for role, text in self.transcript)


class ScriptedAgent:
    """Replays the script; with `engram` it is an agent with memory, without it one with none."""

    def __init__(self, engram: EngramClient | None, *, start: datetime, context_tokens: int = CONTEXT_TOKENS) -> None:
        self.engram = engram
        self.start = start
        self.context_tokens = context_tokens
        self._history: list[str] = []

    def run(
        self,
        users: Sequence[UserScript] = USERS,
        *,
        skip_done: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> list[UserStats]:
        return [self.run_user(u, n, skip_done=skip_done, progress=progress) for n, u in enumerate(users)]

    def run_user(
        self,
        user: UserScript,
        user_index: int,
        *,
        skip_done: bool = False,
        progress: Callable[[str], None] | None = None,
    ) -> UserStats:
        stats = UserStats(subject=user.subject)
        truth = {f.key: f for f in user.facts}
        given: dict[str, str] = {}
        self._history = []
        for index, conv in enumerate(user.conversations):
            for update in conv.updates:
                truth[update.key] = update
            state = _Conversation(
                user=user,
                index=index,
                conv=conv,
                truth=truth,
                given=given,
                given_before=dict(given),
                started=self.start + timedelta(days=3 * index, hours=user_index),
            )
            if skip_done and self._already_stored(state):
                for turn in conv.turns:
                    given.update({k: truth[k].value for k in turn.says})
                continue
            self._run_conversation(state, stats)
            self._history.append(state.conversation_text())
            if progress is not None:
                progress(f"{state.session}: {conv.topic}, {conv.title}")
        return stats

    def _already_stored(self, state: _Conversation) -> bool:
        if self.engram is None:
            return False
        try:
            return self.engram.sessions.get(state.session)["status"] != "open"
        except NotFoundError:
            return False

    def _run_conversation(self, state: _Conversation, stats: UserStats) -> None:
        stats.conversations += 1
        for turn_index, turn in enumerate(state.conv.turns):
            state.say("user", turn.text)
            state.given.update({k: state.truth[k].value for k in turn.says})
            memory, items, trace_id = self._recall(state, turn.text)
            stats.model_calls += 1
            stats.tokens_sent += self._prompt_tokens(memory, state, stats)
            repeated = False
            if turn.needs:
                stats.needed += len(turn.needs)
                said_here = state.conversation_text().casefold()
                unseen = [k for k in turn.needs if state.truth[k].value.casefold() not in said_here]
                quotes = {k: q for k in unseen if (q := _quote(items, state.truth[k].value)) is not None}
                stats.told_before += sum(state.given_before.get(k) == state.truth[k].value for k in unseen)
                stats.recalled += len(quotes)
                missing = [k for k in unseen if k not in quotes]
                if missing:
                    stats.asked += len(missing)
                    known = [k for k in missing if state.given_before.get(k) == state.truth[k].value]
                    stats.asked_known += len(known)
                    repeated = bool(known)
                    state.say("assistant", " ".join(state.truth[k].question for k in missing))
                    state.say("user", " ".join(state.truth[k].sentence for k in missing))
                    state.given.update({k: state.truth[k].value for k in missing})
                    stats.model_calls += 1
                    stats.tokens_sent += self._prompt_tokens(memory, state, stats)
                values = ", ".join(f"{k}: {state.truth[k].value}" for k in turn.needs)
                answer = f"With your setup ({values}), here is what I recommend for this."
                if quotes:
                    recalled = " ".join(dict.fromkeys(quotes.values()))
                    answer = f"From what you told me: {recalled} {answer}"
                else:
                    answer = f"Thanks. {answer}"
            else:
                answer = "Thanks, noted. Tell me if there is anything else I can help with."
            state.say("assistant", answer)
            used = used_item_ids(answer, items)
            self._store(state, turn_index)
            if trace_id is not None:
                self._feedback(state, trace_id, items, used, repeated, stats, turn_index)
        if self.engram is not None:
            self.engram.sessions.end(
                state.session,
                outcome=state.conv.outcome,
                outcome_signal=1.0,
                # When the scripted conversation ended, not when the demo was seeded.
                ended_at=state.at(len(state.transcript)),
                idempotency_key=_key(state.session, "end"),
            )

    def _prompt_tokens(self, memory: str, state: _Conversation, stats: UserStats) -> int:
        if self.engram is None:
            replay = "\n\n".join([SYSTEM_PROMPT, *self._history, state.conversation_text()])
            stats.tokens_full_replay += count_tokens(replay)
        return count_tokens("\n\n".join(p for p in (SYSTEM_PROMPT, memory, state.conversation_text()) if p))

    def _recall(self, state: _Conversation, query: str) -> tuple[str, list[dict[str, Any]], str | None]:
        if self.engram is None:
            return "", [], None
        # The agent sends the conversation so far in its own prompt: those turns need not come back.
        ctx = self.engram.context(
            state.user.subject,
            query=query,
            session=state.session,
            max_tokens=self.context_tokens,
            transcript_turns=state.stored,
        )
        return ctx["prompt"], context_items(ctx), str(ctx["trace_id"])

    def _store(self, state: _Conversation, turn_index: int) -> None:
        if self.engram is None:
            return
        fresh = state.transcript[state.stored :]
        episodes: list[dict[str, Any]] = [
            {
                "subject": state.user.subject,
                "session": state.session,
                "agent": "support-bot",
                "role": role,
                "content": text,
                "occurred_at": state.at(state.stored + n).isoformat(),
                "topics": [state.conv.topic],
                "external_id": f"{state.session}-{state.stored + n + 1:03d}",
            }
            for n, (role, text) in enumerate(fresh)
        ]
        self.engram.episodes.append(episodes, idempotency_key=_key(state.session, "turn", turn_index))  # type: ignore[arg-type]
        state.stored = len(state.transcript)

    def _feedback(
        self,
        state: _Conversation,
        trace_id: str,
        items: list[dict[str, Any]],
        used: list[str],
        repeated: bool,
        stats: UserStats,
        turn_index: int,
    ) -> None:
        assert self.engram is not None
        feedback = self.engram.feedback(
            trace_id,
            used_item_ids=used,
            outcome="success",
            signal=1.0 if used else 0.0,
            asked_to_repeat=repeated,
        )
        stats.offered += feedback["offered_count"]
        stats.used += feedback["used_count"]
        stats.used_own += sum(_said(i)[0] == "assistant" for i in items if i["id"] in used)
        for item in items:
            if item["type"] == "procedure":
                procedure_id = str(item["id"]).split(":", 1)[1]
                self.engram.procedures.record_outcome(
                    procedure_id,
                    applied=True,
                    success=True,
                    signal=1.0,
                    session=state.session,
                    idempotency_key=_key(state.session, "procedure", procedure_id, turn_index),
                )


_EARLIER = "(earlier) "
_ROLE = re.compile(r"^(user|assistant|tool|system): ")
_FACT_NOTE = re.compile(r"\s*\([^()]*confidence [0-9.]+\)\s*$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _said(item: dict[str, Any]) -> tuple[str, str]:
    """Who said a context item ("fact" for a fact, "" when the line names no speaker) and what it says."""
    text = str(item["text"]).strip().removeprefix(_EARLIER)
    if item["type"] == "fact":
        return "fact", _FACT_NOTE.sub("", text)
    role = _ROLE.match(text)
    return (role[1], text[role.end() :]) if role else ("", text)


def _quote(items: Sequence[dict[str, Any]], value: str) -> str | None:
    """The sentence of a context item the agent answers with for a value: of a fact before what the user
    said, before anything else (the agent's own earlier answers), each in the order served; None when
    no item holds the value."""
    found: list[tuple[int, int, str]] = []
    for n, item in enumerate(items):
        role, text = _said(item)
        rank = {"fact": 0, "user": 1, "": 1}.get(role, 2)
        sentence = next((s for s in _SENTENCE.split(text) if value.casefold() in s.casefold()), None)
        if sentence is not None:
            found.append((rank, n, sentence.strip()))
    return min(found)[2] if found else None


def totals(per_user: Sequence[UserStats]) -> UserStats:
    overall = UserStats(subject="overall")
    for stats in per_user:
        overall.add(stats)
    return overall
