"""A development set of long technical user-assistant conversations, generated deterministically.

Each conversation is a user asking an assistant for programming help over many sessions: turns of 200
to 2,000 tokens (cl100k) holding code, tracebacks, log lines and lists. The text is real: functions, their
docstrings and source lines from the standard library and the installed packages, and the README text of
installed distributions, read from the installed files at generation time (nothing of it is stored in
the repository). Into the user's turns, statements about the user are planted: their stack and versions,
deadlines, preferences, the people they work with, their employer; some are updated sessions later
(the newer value is the evidence, the older one stale), with distractors between (the same kind of thing
said of someone else). Each planted statement gives a question whose evidence is the turn that holds it.

`generate(seed=..., conversations=...)` returns `Conversation`s of `evaluation.recall`: the same seed on the
same installation gives the same conversations (the installed files are the corpus). Another installation
(other package versions) gives other text around the same planted statements and questions: `digest()` of
the set and `provenance()` (the interpreter and the distributions read) go into every report, so two
figures are known to come from the same set, or not.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import platform
import random
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path

from core.tokens import count_tokens, truncate_to_tokens
from evaluation.recall import MULTI_SESSION, Conversation, Evidence, Question, Turn

DEFAULT_SEED = 29
DEFAULT_CONVERSATIONS = 30
MIN_TOKENS = 60_000
UPDATE = "knowledge update"

# Where the code comes from: the standard library's top-level modules and these packages, and the
# modules of these installed distributions (those present).
STDLIB_PACKAGES = ("json", "email", "http", "asyncio", "logging", "concurrent", "urllib", "importlib", "sqlite3")
DISTRIBUTIONS = ("Django", "djangorestframework", "celery", "kombu", "redis", "psycopg", "requests", "pytest",
                 "click", "jinja2", "numpy", "rich", "pydantic", "sqlparse", "attrs")  # fmt: skip
SOURCE_FILES = 260


# --- the planted statements --------------------------------------------------------------------
@dataclass(frozen=True)
class Trait:
    name: str
    kind: str
    values: tuple[str, ...]
    # {v}: the value; updates may also name the old one, {old}; others: {who}.
    states: tuple[str, ...]
    updates: tuple[str, ...]
    questions: tuple[str, ...]
    others: tuple[str, ...]


def _versions(name: str, versions: str) -> tuple[str, ...]:
    return tuple(f"{name} {v}" for v in versions.split())


TRAITS: tuple[Trait, ...] = (
    Trait(
        "database",
        "stack",
        _versions("PostgreSQL", "12 13 14 15 16 17") + ("MySQL 8.0", "MariaDB 10.11"),
        ("Our production database is {v}.", "We run {v} in production.", "For context, the database here is {v}."),
        (
            "We upgraded the production database to {v} last week.",
            "We moved from {old} to {v}.",
            "Our database is {v} now, no longer {old}.",
        ),
        (
            "Which database does the user run in production now?",
            "What database and version is the user's production on?",
        ),
        ("My colleague {who}'s team is still on {v}.", "The analytics team uses {v}, not us."),
    ),
    Trait(
        "python",
        "stack",
        _versions("Python", "3.8 3.9 3.10 3.11 3.12 3.13"),
        ("Our services run on {v}.", "I'm stuck on {v} for this project.", "The codebase targets {v}."),
        (
            "We finally moved the services to {v}.",
            "We switched from {old} to {v} this sprint.",
            "Everything runs on {v} now.",
        ),
        ("Which Python version do the user's services run on now?", "What Python version does the user target?"),
        ("{who}'s scripts still need {v}.",),
    ),
    Trait(
        "framework",
        "stack",
        _versions("Django", "3.2 4.2 5.0 5.1") + ("Flask 3.0", "FastAPI 0.110", "Rails 7.1", "Spring Boot 3.2"),
        ("The web app is built on {v}.", "Our backend framework is {v}.", "We use {v} for the API."),
        ("We migrated the web app to {v}.", "The backend is on {v} now, we left {old} behind."),
        (
            "Which web framework and version is the user's backend built on now?",
            "What framework does the user's API use?",
        ),
        ("{who}'s side project uses {v}.",),
    ),
    Trait(
        "os",
        "stack",
        ("Ubuntu 20.04", "Ubuntu 22.04", "Ubuntu 24.04", "Debian 12", "Fedora 40", "macOS Sonoma", "Arch Linux"),
        ("My laptop runs {v}.", "I develop on {v}.", "My dev machine is on {v}."),
        ("I reinstalled my laptop with {v}.", "I'm on {v} now instead of {old}."),
        ("Which operating system does the user develop on now?", "What OS is on the user's dev machine?"),
        ("{who} swears by {v} on the desktop.",),
    ),
    Trait(
        "cloud",
        "stack",
        ("AWS", "Google Cloud", "Azure", "Hetzner", "DigitalOcean", "OVHcloud", "Fly.io"),
        ("We deploy everything on {v}.", "Our infrastructure lives on {v}.", "Production is hosted on {v}."),
        ("We finished moving our infrastructure from {old} to {v}.", "Production is on {v} since the migration."),
        ("Which cloud provider hosts the user's production now?", "Where does the user deploy production?"),
        ("{who}'s company hosts on {v}.",),
    ),
    Trait(
        "ci",
        "stack",
        ("GitHub Actions", "GitLab CI", "Jenkins", "CircleCI", "Buildkite", "Drone CI"),
        ("Our CI runs on {v}.", "The pipelines are on {v}.", "We build and test with {v}."),
        ("We replaced {old} with {v} for CI.", "CI moved to {v} this month."),
        ("Which CI system runs the user's pipelines now?", "What does the user use for CI?"),
        ("{who}'s team is happy with {v}.",),
    ),
    Trait(
        "editor",
        "preference",
        ("VS Code", "Neovim", "PyCharm", "Emacs", "Helix", "Sublime Text", "Zed"),
        ("I write code in {v}.", "My editor is {v}.", "I do everything in {v}."),
        ("I switched my editor from {old} to {v}.", "I've been using {v} since last month."),
        ("Which editor does the user write code in now?", "What is the user's editor?"),
        ("{who} keeps telling me to try {v}.",),
    ),
    Trait(
        "testing",
        "preference",
        ("pytest", "unittest", "Hypothesis with pytest", "nose2", "ward"),
        ("I prefer {v} for tests.", "Please write tests with {v}, it's what I like.", "I always use {v} for testing."),
        ("I've come around to {v} for tests.", "Use {v} for tests from now on, not {old}."),
        ("Which test framework does the user prefer?", "What should tests for the user be written with?"),
        ("{who} prefers {v} for tests.",),
    ),
    Trait(
        "answers",
        "preference",
        (
            "short answers with the code first",
            "detailed explanations before any code",
            "bullet points only",
            "answers with links to the docs",
        ),
        ("I like {v}.", "When you answer, I prefer {v}.", "Just so you know, I prefer {v}."),
        ("Actually, from now on I'd prefer {v}.", "Change of mind: give me {v}."),
        ("How does the user like answers to be written?", "What answer style does the user prefer?"),
        ("{who} likes {v}.",),
    ),
    Trait(
        "deadline",
        "deadline",
        ("March 14", "April 2", "April 28", "May 30", "June 21", "July 9", "August 15", "September 30"),
        ("The release is due on {v}.", "Our deadline for the release is {v}.", "We have to ship the release by {v}."),
        ("The release deadline moved to {v}.", "They pushed the release from {old} to {v}."),
        ("When is the user's release due?", "What is the deadline of the user's release?"),
        ("{who}'s team ships on {v}.",),
    ),
    Trait(
        "manager",
        "people",
        ("Priya Raman", "Jonas Berg", "Amara Okafor", "Diego Alvarez", "Mei Tanaka", "Tomasz Nowak", "Lucia Ferri"),
        ("My manager is {v}.", "I report to {v}.", "{v} is my manager."),
        ("I have a new manager, {v}.", "I report to {v} now since {old} left."),
        ("Who is the user's manager now?", "Whom does the user report to?"),
        ("{who}'s manager is {v}.",),
    ),
    Trait(
        "reviewer",
        "people",
        ("Sam", "Noah", "Fatima", "Elliot", "Ines", "Ravi", "Chloe", "Mateo"),
        (
            "My teammate {v} reviews my pull requests.",
            "{v} does the code reviews on my team.",
            "Pull requests go to {v} for review.",
        ),
        ("{v} reviews my pull requests now.", "Reviews moved from {old} to {v}."),
        ("Who reviews the user's pull requests?", "Which teammate does code review for the user?"),
        ("{who}'s reviewer is {v}.",),
    ),
    Trait(
        "employer",
        "employer",
        (
            "Northwind Bank",
            "Blue Harbor Labs",
            "Acme Robotics",
            "Globex",
            "Stark Logistics",
            "Umbrella Health",
            "Vandelay Imports",
            "Initech",
        ),
        ("I work at {v}.", "I'm a backend engineer at {v}.", "My employer is {v}."),
        ("I left {old} and joined {v}.", "I started a new job at {v}."),
        ("Which company does the user work for now?", "Who is the user's employer?"),
        ("{who} works at {v}.",),
    ),
    Trait(
        "timezone",
        "people",
        ("CET", "UTC", "US Eastern", "US Pacific", "IST", "JST", "AEST"),
        ("I'm in the {v} time zone.", "My working hours are in {v}.", "Schedule things in {v} for me."),
        ("I relocated, so I'm on {v} now.", "My time zone changed from {old} to {v}."),
        ("Which time zone is the user in now?", "What time zone does the user work in?"),
        ("{who} works from {v}.",),
    ),
)
WHO = ("Alex", "Kim", "Jordan", "Robin", "Taylor", "Morgan", "Casey")


# --- questions over many sessions ----------------------------------------------------------------
@dataclass(frozen=True)
class Storyline:
    """Statements said one per session, in order, over at least MIN_STORY_SESSIONS sessions, and the
    question that needs every one of them: putting events in order, how something evolved, a count."""

    kind: str
    # {x}: one of `things`, each said once; {n}: the storyline's number at that step.
    statement: str
    question: str
    things: tuple[str, ...] = ()
    numbers: tuple[int, int] = (0, 0)


MIN_STORY_SESSIONS = 4
STORYLINES: tuple[Storyline, ...] = (
    Storyline(
        "order",
        "Status update: we shipped the {x} today.",
        "In what order did the user ship the pieces of work they mentioned?",
        things=(
            "auth service rewrite",
            "billing export",
            "search indexer",
            "cache layer",
            "audit log",
            "rate limiter",
            "webhook retries",
            "CSV importer",
        ),  # fmt: skip
    ),
    Storyline(
        "order",
        "I finally closed the ticket about the {x}.",
        "Which tickets did the user close, and in what order?",
        things=(
            "flaky login test",
            "memory leak in the worker",
            "slow dashboard query",
            "broken password reset",
            "timezone bug in reports",
            "duplicate emails",
        ),  # fmt: skip
    ),
    Storyline(
        "evolution",
        "Quick aside: our team is {n} engineers at the moment.",
        "How has the size of the user's team changed over time?",
        numbers=(3, 14),
    ),
    Storyline(
        "evolution",
        "By the way, the full test suite now takes {n} minutes on CI.",
        "How did the run time of the user's test suite on CI evolve?",
        numbers=(6, 40),
    ),
    Storyline(
        "aggregation",
        "We had another production incident, this time with the {x}.",
        "How many production incidents has the user mentioned, and what were they about?",
        things=(
            "payment gateway",
            "DNS records",
            "message queue",
            "disk on the database host",
            "TLS certificate",
            "load balancer",
        ),  # fmt: skip
    ),
    Storyline(
        "aggregation",
        "I gave a talk about {x} at a meetup this week.",
        "How many talks has the user given, and on which topics?",
        things=(
            "structured logging",
            "database migrations",
            "property-based testing",
            "async Python",
            "observability",
            "feature flags",
        ),  # fmt: skip
    ),
)


def _story_steps(story: Storyline, rng: random.Random, count: int) -> list[str]:
    if story.things:
        return [story.statement.format(x=x) for x in rng.sample(story.things, count)]
    low, high = story.numbers
    values = sorted(rng.sample(range(low, high + 1), count))
    if rng.random() < 0.5:
        values.reverse()
    return [story.statement.format(n=n) for n in values]


def _tell_stories(
    rng: random.Random, subject: str, turns: list[Turn], taken: set[str], first_index: int
) -> list[Question]:
    """Weave two storylines into user turns that hold no planted statement, one statement per session
    (at least MIN_STORY_SESSIONS of them), and return their questions. Changes the turns in place."""
    questions: list[Question] = []
    for story in rng.sample(STORYLINES, 2):
        free: dict[str, list[int]] = {}
        for i, turn in enumerate(turns):
            if turn.speaker == "user" and turn.external_id not in taken:
                free.setdefault(turn.session, []).append(i)
        order = list(free)
        count = min(rng.randint(MIN_STORY_SESSIONS, MIN_STORY_SESSIONS + 2), len(order))
        if count < MIN_STORY_SESSIONS:
            break
        chosen = sorted(rng.sample(order, count), key=order.index)
        evidence = []
        for session, text in zip(chosen, _story_steps(story, rng, count), strict=True):
            i = rng.choice(free[session])
            turn = turns[i]
            turns[i] = Turn(turn.external_id, turn.speaker, f"{turn.text}\n\n{text}", turn.when, turn.session)
            taken.add(turn.external_id)
            evidence.append(Evidence(turn.external_id, None, text))
        questions.append(
            Question(
                subject, first_index + len(questions), story.question, f"{MULTI_SESSION}: {story.kind}", tuple(evidence)
            )
        )
    return questions


# --- the corpus --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Snippet:
    module: str
    name: str
    docstring: str
    source: str
    path: str


@dataclass(frozen=True)
class Corpus:
    snippets: tuple[Snippet, ...]
    readmes: tuple[tuple[str, tuple[str, ...]], ...]  # (distribution, paragraphs)


def _source_files() -> list[tuple[str, Path]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [(f"stdlib/{p.name}", p) for p in sorted(stdlib.glob("*.py"))]
    for package in STDLIB_PACKAGES:
        files += [(f"stdlib/{package}/{p.name}", p) for p in sorted((stdlib / package).glob("*.py"))]
    for name in DISTRIBUTIONS:
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for f in sorted(dist.files or (), key=str):
            if f.suffix == ".py" and "test" not in str(f) and "migrations" not in str(f):
                files.append((f"{name}/{f}", Path(str(dist.locate_file(f)))))
    return files


def _snippets(label: str, path: Path) -> list[Snippet]:
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    out = []
    lines = text.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            doc = ast.get_docstring(node) or ""
            # Whole lines sliced once (ast.get_source_segment splits the file again for every node).
            indent = node.col_offset
            source = "\n".join(ln[indent:] for ln in lines[node.lineno - 1 : node.end_lineno or node.lineno])
            if len(doc) >= 80 and 200 <= len(source) <= 6000:
                module = label.removesuffix(".py").replace("/", ".")
                out.append(Snippet(module, node.name, doc, source, label))
    return out


def _readmes() -> tuple[tuple[str, tuple[str, ...]], ...]:
    # Only the distributions the set names: every installed one would make the set depend on the path
    # it is run with (the project's own README and its client's, found through "." or PYTHONPATH, made
    # two versions of the set under the same turn ids in one checkout).
    out = []
    for name in sorted(DISTRIBUTIONS, key=str.lower):
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""  # type: ignore[attr-defined]
        paragraphs = tuple(p.strip() for p in str(body).split("\n\n") if 120 <= len(p.strip()) <= 1500)
        if len(paragraphs) >= 4:
            out.append((str(dist.metadata["Name"]), paragraphs))
    return tuple(out)


@lru_cache(maxsize=4)
def load_corpus(seed: int) -> Corpus:
    """Snippets of a seeded sample of the installed source files, and the installed READMEs."""
    files = _source_files()
    rng = random.Random(f"techchat-corpus:{seed}")
    chosen = sorted(rng.sample(files, min(SOURCE_FILES, len(files))), key=lambda f: f[0])
    snippets = [s for label, path in chosen for s in _snippets(label, path)]
    return Corpus(tuple(snippets), _readmes())


def digest(conversations: Sequence[Conversation]) -> str:
    """A short SHA-256 of everything the evaluation reads of the set: turns, their order, speakers and
    times, and the questions with their evidence."""
    h = hashlib.sha256()
    for conv in conversations:
        for t in conv.turns:
            h.update(f"{t.external_id}\x1f{t.speaker}\x1f{t.when}\x1f{t.text}\x1e".encode())
        for q in conv.questions:
            h.update(f"{q!r}\x1e".encode())
    return h.hexdigest()[:16]


def provenance(seed: int = DEFAULT_SEED) -> str:
    """The interpreter and the distributions (name and version) the corpus of `seed` was read from."""
    corpus = load_corpus(seed)
    drawn = {s.path.split("/", 1)[0] for s in corpus.snippets} - {"stdlib"}
    drawn |= {name for name, _ in corpus.readmes}
    versions = sorted(f"{name} {importlib.metadata.version(name)}" for name in drawn)
    return f"Python {platform.python_version()} standard library; " + ", ".join(versions)


# --- turns -------------------------------------------------------------------------------------
ASKS = (
    "I'm trying to understand how `{name}` in `{module}` works. Here is the code I'm looking at:",
    "Can you explain what this function does and whether it's safe to call from several threads?",
    "I copied `{name}` from `{module}` into our codebase and tests started failing. The code:",
    "Could you review this and suggest how to make it easier to test?",
    "We hit a bug around `{module}.{name}` in production. This is the relevant code:",
    "How would you refactor this? It's `{name}` from `{module}`:",
)
LOG_ASKS = (
    "Our worker crashed overnight with this traceback and these log lines. Any idea what's going on?",
    "The deploy failed, here are the logs. What should I look at first?",
    "This error shows up about once an hour in the logs:",
)
CLOSINGS = (
    "What would you change first?",
    "Is there a simpler way to do this?",
    "Can you also write a small test for it?",
    "Thanks in advance, this has been bugging me all day.",
    "Please keep the public interface the same.",
)
ERRORS = ("ValueError", "KeyError", "TypeError", "RuntimeError", "TimeoutError", "ConnectionResetError",
          "AttributeError", "OSError")  # fmt: skip
LEVELS = ("INFO", "INFO", "WARNING", "ERROR", "DEBUG")


class _Writer:
    def __init__(self, corpus: Corpus, rng: random.Random) -> None:
        self.corpus = corpus
        self.rng = rng

    def snippet(self) -> Snippet:
        return self.rng.choice(self.corpus.snippets)

    def code(self, s: Snippet, max_tokens: int) -> str:
        return f"```python\n{truncate_to_tokens(s.source, max_tokens).rstrip()}\n```"

    def log(self, lines: int) -> str:
        """A traceback through real functions and their lines, then log lines naming real modules."""
        frames = [self.snippet() for _ in range(self.rng.randint(3, 6))]
        out = ["Traceback (most recent call last):"]
        for f in frames:
            body = [ln for ln in f.source.splitlines()[1:] if ln.strip() and not ln.strip().startswith(("#", '"'))]
            line = self.rng.choice(body).strip() if body else "pass"
            out.append(f'  File "/srv/app/{f.path}", line {self.rng.randint(20, 900)}, in {f.name}')
            out.append(f"    {line}")
        first_doc = frames[-1].docstring.split("\n")[0][:120]
        out.append(f"{self.rng.choice(ERRORS)}: {first_doc}")
        stamp = datetime(2025, 3, 1, 2, 0, tzinfo=UTC) + timedelta(seconds=self.rng.randint(0, 86_400))
        for _ in range(lines):
            f = self.snippet()
            stamp += timedelta(milliseconds=self.rng.randint(5, 4000))
            message = f.docstring.split("\n")[0][:140]
            out.append(f"{stamp:%Y-%m-%d %H:%M:%S},{stamp.microsecond // 1000:03d} {self.rng.choice(LEVELS):<7} "
                       f"[{f.module}] {message}")  # fmt: skip
        return "```\n" + "\n".join(out) + "\n```"

    def readme_list(self) -> str:
        name, paragraphs = self.rng.choice(self.corpus.readmes)
        picked = self.rng.sample(paragraphs, min(len(paragraphs), self.rng.randint(2, 4)))
        return f"From the {name} documentation:\n\n" + "\n".join(f"- {' '.join(p.split())}" for p in picked)

    def user(self, target: int) -> str:
        """A request of about `target` tokens: a question, code or logs, and a closing line."""
        s = self.snippet()
        if self.rng.random() < 0.35:
            head = self.rng.choice(LOG_ASKS)
            body = self.log(self.rng.randint(4, 14))
        else:
            head = self.rng.choice(ASKS).format(name=s.name, module=s.module)
            body = self.code(s, max(target - 40, 120))
        text = f"{head}\n\n{body}"
        while count_tokens(text) < target:
            text += "\n\nAnd the logs from the same run:\n\n" + self.log(self.rng.randint(4, 10))
        return self._fit(text, target - 20) + f"\n\n{self.rng.choice(CLOSINGS)}"

    def assistant(self, target: int) -> str:
        """An explanation of about `target` tokens: docstrings, a list, code."""
        parts: list[str] = []
        used = 0
        while used < target:
            s = self.snippet()
            choice = self.rng.random()
            if choice < 0.4:
                part = f"Looking at `{s.module}.{s.name}`:\n\n{s.docstring.strip()}"
            elif choice < 0.65 and self.corpus.readmes:
                part = self.readme_list()
            else:
                part = f"Here is how `{s.name}` does it:\n\n{self.code(s, self.rng.randint(150, 600))}"
            parts.append(part)
            used += count_tokens(part)
        return self._fit("\n\n".join(parts), target)

    def _fit(self, text: str, target: int) -> str:
        if count_tokens(text) <= target:
            return text
        budget = target
        while True:
            cut = truncate_to_tokens(text, budget).rstrip()
            # A code block cut open is closed again, within the target: the fence costs tokens too.
            fitted = cut + "\n```" if cut.count("```") % 2 else cut
            if count_tokens(fitted) <= target or budget <= 1:
                return fitted
            budget -= count_tokens(fitted) - target


# --- conversations -----------------------------------------------------------------------------
@dataclass
class _Plant:
    trait: Trait
    text: str
    question: str
    update_of: str = ""  # the older statement's text, for an update
    value: str = ""


def generate(
    *, seed: int = DEFAULT_SEED, conversations: int = DEFAULT_CONVERSATIONS, min_tokens: int = MIN_TOKENS
) -> list[Conversation]:
    """`conversations` conversations of subject `tech-<nn>`, each at least `min_tokens` tokens, with 11
    questions (2 of them knowledge updates), and 2 more that need statements of 4 to 6 sessions each
    (STORYLINES: order, evolution, aggregation), reported apart from the overall figures."""
    corpus = load_corpus(seed)
    master = random.Random(seed)
    return [
        _conversation(random.Random(master.getrandbits(64)), corpus, f"tech-{n:02d}", min_tokens)
        for n in range(conversations)
    ]


def _conversation(rng: random.Random, corpus: Corpus, subject: str, min_tokens: int) -> Conversation:
    writer = _Writer(corpus, rng)
    traits = rng.sample(TRAITS, 11)
    updated, stated = traits[:2], traits[2:]
    # (text, question, stale text, evidence label) in the order they will be said; updates say their old
    # value early, a distractor in between, and the new value late.
    early: list[tuple[str, str]] = []  # (kind, text)
    middle: list[tuple[str, str]] = []
    late: list[tuple[str, str]] = []
    plants: dict[str, _Plant] = {}
    for trait in updated:
        old, new = rng.sample(trait.values, 2)
        other = rng.choice([v for v in trait.values if v not in (old, new)])
        older = rng.choice(trait.states).format(v=old)
        newer = rng.choice(trait.updates).format(v=new, old=old)
        early.append(("plant", older))
        middle.append(("other", rng.choice(trait.others).format(who=rng.choice(WHO), v=other)))
        late.append(("plant", newer))
        plants[newer] = _Plant(trait, newer, rng.choice(trait.questions), update_of=older, value=new)
    for trait in stated:
        value = rng.choice(trait.values)
        text = rng.choice(trait.states).format(v=value)
        rng.choice((early, middle, late)).append(("plant", text))
        plants[text] = _Plant(trait, text, rng.choice(trait.questions), value=value)
    for group in (early, middle, late):
        rng.shuffle(group)
    statements = early + middle + late

    turns: list[Turn] = []
    tokens = 0
    day = datetime(2025, 1, 6, 9, 0, tzinfo=UTC) + timedelta(days=rng.randint(0, 200))
    said: dict[str, str] = {}
    session_number = 0
    # Statements are spread over the user turns; the conversation goes on until it is long enough and
    # every statement was said, with at least one user turn after the last.
    pending = list(statements)
    while tokens < min_tokens or pending:
        session_number += 1
        session = f"{subject}:s{session_number}"
        day += timedelta(days=rng.randint(1, 9))
        when = day + timedelta(minutes=rng.randint(0, 480))
        for _ in range(rng.randint(3, 6)):
            user = writer.user(rng.randint(220, 800))
            # Spread over the length still to come (a turn pair is about 1,650 tokens).
            if pending and rng.random() < len(pending) * 1650 / max(min_tokens - tokens, 1650):
                kind, text = pending.pop(0)
                paragraphs = user.split("\n\n")
                at = rng.choice((0, 1, len(paragraphs)))
                paragraphs.insert(at, text)
                user = "\n\n".join(paragraphs)
                if kind == "plant":
                    said[text] = f"{session}:t{len(turns) + 1}"
            reply = writer.assistant(rng.randint(300, 2000))
            for role, content in (("user", user), ("assistant", reply)):
                turns.append(Turn(f"{session}:t{len(turns) + 1}", role, content, when, session))
                tokens += count_tokens(content)
                when += timedelta(minutes=rng.randint(1, 6))
    order = {t.external_id: i for i, t in enumerate(turns)}
    questions = []
    for index, plant in enumerate(sorted(plants.values(), key=lambda p: order[said[p.text]])):
        stale = (Evidence(said[plant.update_of], None, plant.update_of),) if plant.update_of else ()
        questions.append(
            Question(
                subject,
                index,
                plant.question,
                UPDATE if plant.update_of else plant.trait.kind,
                (Evidence(said[plant.text], None, plant.text),),
                stale,
            )
        )
    # The storylines draw from a generator of their own, seeded last, so that everything above is the
    # same text as before they were added.
    questions += _tell_stories(random.Random(rng.getrandbits(64)), subject, turns, set(said.values()), len(questions))
    return Conversation(subject, turns, questions)
