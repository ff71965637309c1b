"""The offline session summary: the session's distinct points, once each, in prose, within a token cap.

1. Prose only. Code, markup, logs, tables, stack traces and shell sessions are recognised by their
   shape, not by words of any language or dataset: fenced and indented blocks, table rows, tags, shell
   prompts, timestamped or levelled log lines, stack frames, lines that end like code (`;`, `{`, `}`),
   and lines dense in symbols or in code-shaped tokens (calls, paths, flags, snake_case, a.b).
   A sentence that introduces what follows (ending in ":") goes with it.
2. No repeats. Sentences equal after normalisation, or near-equal (character trigrams, Jaccard
   >= NEAR_DUPLICATE), count once.
3. Coverage. Sentences are TF-IDF vectors (words; character bigrams for scripts written without
   spaces), relevance is the cosine to the session's centroid (the subject's own turns weighted up),
   and maximal marginal relevance picks them: each pick is penalised by its similarity to what was
   picked, so a second topic beats a third sentence on the first. No model call: cheap enough for
   every session end.
4. Nothing to say, nothing written: a session whose prose holds fewer than MIN_CONTENT content units
   (words that are not function or courtesy words, numbers; two characters of an unspaced script
   count one) and no sentence of MIN_SENTENCE_CONTENT (greetings, thanks, code only) gets an empty
   summary, and the consolidator stores none.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator, Sequence

from core.tokens import count_tokens
from episodic.models import Episode

from .base import extractable

SUMMARY_MAX_TOKENS = 200
MMR_LAMBDA = 0.6
NEAR_DUPLICATE = 0.6
MIN_CONTENT = 6
MIN_SENTENCE_CONTENT = 3
SUBJECT_WEIGHT = 1.25
MAX_SENTENCE_TOKENS = 60
# Roles of the agent's side; any other role is a person (the subject or a named speaker).
AGENT_ROLES = frozenset({"assistant", "system", "tool", "agent", "bot", "ai", "model", "developer", "function"})

# --- 1. prose only

_FENCE = re.compile(r"^\s*(?:```|~~~)")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_STRUCTURED_LINE = re.compile(
    "|".join(
        [
            r"^(?: {4,}|\t)",  # an indented block
            r"^\s*#{1,6}\s",  # a heading
            r"^\s*>",  # a quotation or a prompt
            r"\|.*\|",  # a table row
            r"^\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*$",  # a rule or a table's separator
            r"</?[A-Za-z][\w:-]*(?:\s[^<>]*)?/?>",  # a tag
            r"^\s*(?:\$|%|#|>>>|\.\.\.|PS\s*\S*>)\s",  # a shell or REPL prompt
            r"^\s*[\w.-]+@[\w.-]+:\S*\s*[$#]",  # user@host:path$
            r"^\s*\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}",  # a timestamped log line
            r"^\s*\[?\d{1,2}:\d{2}:\d{2}",
            r"^\s*\[?(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL|SEVERE)\b\]?[:!\s]",
            r"^\s*[a-z][\w.-]*(?:\[\d+\])?:\s",  # tool: message ("fatal: not a git repository")
            r"^\s*[a-z][\w.@/-]*\s+-\s",  # tool - message
            r"^\s*Traceback \(most recent call last\)",
            r"^\s*File \"[^\"]+\", line \d+",
            r"^\s*at\s+\S+\s*\(.*:\d+(?::\d+)?\)\s*$",  # a JavaScript or Java stack frame
            r"^\s*(?:[\w]+\.)*\w*(?:Error|Exception|Warning)(?::|$)",  # an exception's line
            r"[;{}]\s*$|^\s*[{}\])]",  # ends or opens like code
            r"^\s*(?:\w+\s*)?[\w.\[\]'\"]+\s*(?:=|:=|\+=|-=|==|=>|->)\s*\S",  # an assignment or arrow
            r"^\s*(?:def|class|import|from\s+\S+\s+import|function|const|let|var|return|public|private|"
            r"#include|package|SELECT|INSERT|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(?:TABLE|INDEX))\b",
        ]
    )
)
# Tokens shaped like code: calls, paths, flags, operators, snake_case, camelCase, a.b, $VARS.
_CODE_TOKEN = re.compile(r"[(){}\[\];=<>\\$`|]|::|->|=>|^--?\w|\w_\w|[a-z][A-Z]|\w\.\w*[A-Za-z]\w*|^~?/|\w/\w.*/|^\.\w")
_URL = re.compile(r"\b(?:https?://|www\.)\S+")


def _symbol_share(text: str) -> float:
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 1.0
    symbols = sum(1 for c in chars if not c.isalnum() and unicodedata.category(c)[0] not in "LN")
    return symbols / len(chars)


def _is_code_shaped(text: str) -> bool:
    tokens = _URL.sub("URL", text).split()
    if not tokens:
        return True
    code = sum(1 for t in tokens if _CODE_TOKEN.search(t))
    return code >= 2 and code / len(tokens) >= 0.25 or (len(tokens) <= 3 and code >= 1)


_INDENTED_CODE = re.compile(r"^(?: {4}|\t)")


def lines_outside_code(text: str) -> Iterator[str]:
    """The lines of a message outside code fences and indented blocks: what a user pastes (code, its
    docstrings and comments, tracebacks) is not what the user says."""
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced and not _INDENTED_CODE.match(line):
            yield line


def prose_lines(text: str) -> Iterator[str]:
    """The lines of a message that are prose: outside code fences, not shaped like code, markup,
    logs or tables; list markers removed."""
    fenced = False
    for raw in text.splitlines():
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        if fenced or not raw.strip():
            continue
        bullet = _BULLET.match(raw)
        line = raw[bullet.end() :] if bullet else raw
        if not bullet and _STRUCTURED_LINE.search(line):
            continue
        if bullet and _STRUCTURED_LINE.search(line.lstrip()):
            continue
        line = line.strip()
        if _symbol_share(line) > 0.2 or _is_code_shaped(line):
            continue
        yield line


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])\s*")


def prose_sentences(text: str) -> Iterator[str]:
    for line in prose_lines(text):
        for sentence in _SENTENCE_END.split(line):
            sentence = sentence.strip()
            # "Then register the hook:" introduces what follows, which is not here.
            if not sentence or sentence.endswith((":", "：")) or _is_code_shaped(sentence):
                continue
            yield sentence


# --- 2. and 3. vectors, duplicates, coverage

_UNSPACED = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[^\W\d_{_UNSPACED}][^\W_{_UNSPACED}]+(?:'[^\W\d_]+)?")
_UNSPACED_RUN = re.compile(rf"[{_UNSPACED}]+")
# Words that carry no topic in the languages a summary most often meets; other languages' function
# words are discounted by their document frequency (IDF) alone.
_FUNCTION_WORDS = frozenset(
    """
    the a an and or but if then so to of in on at for with from by is are was were be been being it its this
    that these those i you we they he she me my your our their him her us them do does did done have has had
    not no yes ok okay can could would should will shall may might must just about what which who whom how
    when where why there here please thanks thank hi hello hey bye goodbye welcome sure great good nice cool
    fine well also very really too much many more most some any all each every other than as into out up
    down over under again still now today help let know like get got make made want need use using one two
    i'm you're we're it's that's there's don't doesn't didn't can't won't i've i'll i'd you'll you've
    der die das den dem des ein eine einen einem einer und oder aber wenn dann ist sind war waren sein bin
    ich du wir ihr sie er es mich mir dich dir uns euch ihnen mit von zu zur zum im in an auf für bei aus
    nach nicht kein keine ja nein danke bitte hallo tschüss guten tag morgen abend wie was wer wo warum
    kann können helfen gut schön auch noch schon jetzt hier da so sehr
    le la les un une des et ou mais si est sont je tu il elle nous vous ils elles de du au aux en pour avec
    pas merci bonjour salut oui non
    el los las unos unas y o pero es son yo tú él ella nosotros ellos con por para gracias hola sí
    """.split()
)


def _features(sentence: str) -> list[str]:
    low = sentence.casefold()
    words = [w for w in _WORD.findall(low) if w not in _FUNCTION_WORDS]
    grams = [run[i : i + 2] for run in _UNSPACED_RUN.findall(low) for i in range(max(1, len(run) - 1))]
    return words + grams


def content_units(sentence: str) -> float:
    """Words of content, a script written without spaces counting one per two characters."""
    low = sentence.casefold()
    words = [w for w in _WORD.findall(low) if w not in _FUNCTION_WORDS and len(w) > 2]
    numbers = re.findall(r"(?<![\w.])\d+(?:[.,:]\d+)*(?!\w|\.\d)", low)
    unspaced = sum(len(run) for run in _UNSPACED_RUN.findall(low))
    return len(words) + len(numbers) + unspaced / 2


def _normalised(sentence: str) -> str:
    return " ".join(re.findall(r"\w+", sentence.casefold()))


def _trigrams(text: str) -> frozenset[str]:
    return frozenset(text[i : i + 3] for i in range(max(1, len(text) - 2)))


def near_duplicate(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a) and bool(b) and len(a & b) / len(a | b) >= NEAR_DUPLICATE


def _unit(counts: Counter[str], idf: dict[str, float]) -> dict[str, float]:
    vec = {f: (1 + math.log(n)) * idf[f] for f, n in counts.items()}
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {f: v / norm for f, v in vec.items()}


def _cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(f, 0.0) for f, v in a.items())


class _Sentence:
    __slots__ = ("cost", "grams", "index", "relevance", "speaker", "text", "vector")

    def __init__(self, index: int, speaker: str, text: str) -> None:
        self.index, self.speaker, self.text = index, speaker, text
        self.grams = _trigrams(_normalised(text).replace(" ", ""))
        self.cost = count_tokens(f"{speaker}: {text}") + 1
        self.vector: dict[str, float] = {}
        self.relevance = 0.0


def _distinct_sentences(items: Sequence[Episode]) -> list[_Sentence]:
    out: list[_Sentence] = []
    seen: set[str] = set()
    for episode in items:
        if episode.kind == "outcome":
            continue
        speaker = episode.role or episode.kind
        for text in prose_sentences(episode.content):
            key = _normalised(text)
            if not key or key in seen:
                continue
            seen.add(key)
            candidate = _Sentence(len(out), speaker, text)
            if candidate.cost > MAX_SENTENCE_TOKENS or content_units(text) < 1:
                continue
            if any(near_duplicate(candidate.grams, other.grams) for other in out):
                continue
            out.append(candidate)
    return out


def _select(candidates: list[_Sentence], budget: int) -> list[_Sentence]:
    counts = [Counter(_features(c.text)) for c in candidates]
    df: Counter[str] = Counter(f for c in counts for f in c)
    n = len(candidates)
    idf = {f: math.log((1 + n) / (1 + d)) + 1 for f, d in df.items()}
    centroid: dict[str, float] = {}
    for candidate, feats in zip(candidates, counts, strict=True):
        candidate.vector = _unit(feats, idf)
        weight = 1.0 if candidate.speaker.lower() in AGENT_ROLES else SUBJECT_WEIGHT
        for f, v in candidate.vector.items():
            centroid[f] = centroid.get(f, 0.0) + weight * v
    norm = math.sqrt(sum(v * v for v in centroid.values())) or 1.0
    for candidate in candidates:
        weight = 1.0 if candidate.speaker.lower() in AGENT_ROLES else SUBJECT_WEIGHT
        candidate.relevance = weight * _cosine(candidate.vector, centroid) / norm
    chosen: list[_Sentence] = []
    redundancy = {c.index: 0.0 for c in candidates}
    left = list(candidates)
    used = 0
    while left:
        best = max(
            (c for c in left if used + c.cost <= budget),
            key=lambda c: (MMR_LAMBDA * c.relevance - (1 - MMR_LAMBDA) * redundancy[c.index], -c.index),
            default=None,
        )
        if best is None:
            break
        chosen.append(best)
        used += best.cost
        left.remove(best)
        for c in left:
            redundancy[c.index] = max(redundancy[c.index], _cosine(c.vector, best.vector))
    return sorted(chosen, key=lambda c: c.index)


def _render(chosen: list[_Sentence], outcome_line: str) -> str:
    lines: list[str] = []
    speaker = None
    for sentence in chosen:
        if sentence.speaker == speaker:
            lines[-1] += ("" if lines[-1].endswith(("。", "！", "？")) else " ") + sentence.text
        else:
            lines.append(f"{sentence.speaker}: {sentence.text}")
            speaker = sentence.speaker
    if outcome_line:
        lines.append(outcome_line)
    return "\n".join(lines)


def extractive_summary(episodes: Sequence[Episode], *, max_tokens: int = SUMMARY_MAX_TOKENS) -> str:
    """The session's distinct points in prose, in their original order, within `max_tokens`
    (tiktoken); the outcome, when one was recorded in prose, is kept. Empty when the session holds
    nothing to summarise."""
    items = extractable(episodes)
    candidates = _distinct_sentences(items)
    units = [content_units(c.text) for c in candidates]
    if sum(units) < MIN_CONTENT and max(units, default=0) < MIN_SENTENCE_CONTENT:
        return ""
    outcome = next((e for e in reversed(items) if e.kind == "outcome"), None)
    outcome_text = " ".join(prose_sentences(outcome.content)) if outcome else ""
    outcome_line = f"Outcome: {outcome_text}" if outcome_text else ""
    if outcome_line and count_tokens(outcome_line) > max_tokens // 4:
        outcome_line = ""
    chosen = _select(candidates, max_tokens - (count_tokens(outcome_line) + 1 if outcome_line else 0))
    text = _render(chosen, outcome_line)
    while chosen and count_tokens(text) > max_tokens:
        chosen.pop()
        text = _render(chosen, outcome_line)
    return text if chosen else ""
