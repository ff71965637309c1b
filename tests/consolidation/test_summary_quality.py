"""Offline session summaries that summarise: no repeated sentence, no code, markup, logs or tables,
within the token cap, covering the session's distinct topics; nothing written for a session with
nothing to say. Through the API (episodes in, session ended, summary read back) and, for the
languages and shapes, on the summariser itself."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from difflib import SequenceMatcher

import pytest

from consolidation.extractors.summary import SUMMARY_MAX_TOKENS, extractive_summary
from core.tokens import count_tokens
from episodic.models import Episode

pytestmark = pytest.mark.django_db

SAID = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)

CODE_LINES = [
    "const data = await response.json();",
    "module.exports = { extends: ['@commitlint/config-conventional'] };",
    "npx husky add .husky/commit-msg 'npx --no -- commitlint --edit $1'",
    "husky - commit-msg hook exited with code 1 (error)",
    "2026-03-04 10:01:12,345 ERROR [worker-3] Connection refused: db:5432",
    "Traceback (most recent call last):",
    '  File "/app/jobs/backup.py", line 42, in run',
    "psycopg.OperationalError: connection to server failed",
    "| service | port | status |",
    "|---------|------|--------|",
    "| db      | 5432 | down   |",
    '<div class="alert">Backup failed</div>',
    "$ docker compose up -d --build",
    "    for row in rows: print(row)",
    "if (!res.ok) { throw new Error(res.statusText); }",
    "SELECT id, name FROM users WHERE active = true;",
]

CODE_HEAVY = [
    ("user", "I'm setting up husky so that every commit message in our monorepo is checked by commitlint."),
    (
        "assistant",
        "Add a commitlint config at the root of the repository:\n```js\n"
        + CODE_LINES[1]
        + "\n```\nThen register the hook:\n```\n"
        + CODE_LINES[2]
        + "\n```\nThe hook runs commitlint against the message of every commit.",
    ),
    ("user", "It fails on every commit now:\n" + "\n".join([CODE_LINES[3]] * 20)),
    (
        "assistant",
        "The hook rejects messages that do not follow the conventional commit format. "
        "Start the message with a type such as feat or fix, followed by a colon and a short description.",
    ),
    ("user", "Now the frontend fetch breaks too:\n" + "\n".join([CODE_LINES[0]] * 12) + "\n" + CODE_LINES[14]),
    (
        "assistant",
        "The response body can only be read once, so parse it a single time and reuse the result.\n"
        "```ts\n" + CODE_LINES[0] + "\n" + CODE_LINES[14] + "\n```",
    ),
    (
        "user",
        "Separately, the nightly Postgres backup job crashes in the worker container.\n"
        + "\n".join(CODE_LINES[4:8])
        + "\n"
        + "\n".join(CODE_LINES[8:11]),
    ),
    (
        "assistant",
        "The backup worker cannot reach the database host because the compose network changed. "
        "Put both services on the same network and restart them:\n"
        + CODE_LINES[12]
        + "\n"
        + CODE_LINES[11]
        + "\n"
        + CODE_LINES[13]
        + "\n"
        + CODE_LINES[15],
    ),
]


def _episodes(turns: list[tuple[str, str]]) -> list[Episode]:
    return [
        Episode(id=i, subject="u1", kind="message", role=role, content=text, occurred_at=SAID)
        for i, (role, text) in enumerate(turns, start=1)
    ]


def _sentences(summary: str) -> list[str]:
    body = re.sub(r"^[\w -]{1,40}: ", "", summary, flags=re.MULTILINE)
    return [s.strip() for s in re.split(r"(?<=[.!?。！？])\s*|\n", body) if s.strip()]


def _assert_no_repeats(summary: str) -> None:
    said = [re.sub(r"\W+", " ", s.casefold()).strip() for s in _sentences(summary)]
    for i, a in enumerate(said):
        for b in said[i + 1 :]:
            assert SequenceMatcher(None, a, b).ratio() < 0.8, (a, b, summary)


def _converse(api, session: str, turns: list[tuple[str, str]], callbacks) -> None:
    episodes = [
        {"subject": "u1", "session": session, "kind": "message", "role": role, "content": text} for role, text in turns
    ]
    assert api.post("/v1/episodes", {"episodes": episodes}, format="json").status_code == 201
    with callbacks(execute=True):
        assert api.post(f"/v1/sessions/{session}/end", {"outcome": "success"}, format="json").status_code == 200


def test_a_code_heavy_sessions_summary_holds_its_prose_once_and_none_of_its_code(
    api_a, django_capture_on_commit_callbacks
) -> None:
    _converse(api_a, "hooks", CODE_HEAVY, django_capture_on_commit_callbacks)
    summary = api_a.get("/v1/sessions/hooks").json()["summary"]
    for line in CODE_LINES:
        assert line.strip() not in summary, (line, summary)
    assert not re.search(r"[{};`|<>$]|\(\)|==|=>", summary), summary
    _assert_no_repeats(summary)
    assert count_tokens(summary) <= SUMMARY_MAX_TOKENS
    # The three topics of the session: the commit hook, the fetch, the backup job.
    for topic in ("commit", "response", "backup"):
        assert topic in summary.lower(), (topic, summary)


def test_a_greeting_only_session_gets_no_summary(api_a, django_capture_on_commit_callbacks) -> None:
    turns = [
        ("user", "hi"),
        ("assistant", "Hello! How can I help you today?"),
        ("user", "Thanks, that's all for now. Bye!"),
        ("assistant", "You're welcome, have a great day!"),
    ]
    _converse(api_a, "hello", turns, django_capture_on_commit_callbacks)
    assert api_a.get("/v1/sessions/hello").json()["summary"] == ""
    assert api_a.get("/v1/episodes", {"session": "hello", "kind": "summary"}).json()["results"] == []


@pytest.mark.parametrize("cap", [40, 80, SUMMARY_MAX_TOKENS])
def test_a_summary_stays_within_its_token_cap(cap: int) -> None:
    summary = extractive_summary(_episodes(CODE_HEAVY), max_tokens=cap)
    assert summary and count_tokens(summary) <= cap


def test_repeated_and_near_repeated_lines_appear_once() -> None:
    closing = [
        "Let me know if you have any other questions!",
        "Let me know if you have other questions.",
        "Let me know if you have any other questions.",
    ]
    turns = [
        ("user", "Our staging cluster runs out of memory every night around two o'clock."),
        ("assistant", "The cron job that rebuilds the search index holds every document in memory. " + closing[0]),
        ("user", "Our staging cluster runs out of memory every night around two o'clock."),
        ("assistant", "Stream the documents in batches of a thousand instead of loading them at once. " + closing[1]),
        ("user", "Our staging cluster runs out of memory every night around 2 o'clock!"),
        ("assistant", "Also lower the worker concurrency of that job to one. " + closing[2]),
    ]
    summary = extractive_summary(_episodes(turns))
    _assert_no_repeats(summary)
    assert summary.lower().count("out of memory") == 1
    assert sum(summary.count(c) for c in {c.rstrip(".!") for c in closing}) <= 1
    assert "batches" in summary


def test_a_summary_covers_the_sessions_distinct_topics_not_only_its_longest() -> None:
    migration = [
        ("user", "We are migrating the billing service from MySQL to PostgreSQL next month."),
        (
            "assistant",
            "Migrating billing from MySQL to PostgreSQL needs the schema converted first. "
            "MySQL unsigned integers become PostgreSQL bigint columns in the billing schema. "
            "MySQL datetime columns become PostgreSQL timestamptz columns in billing. "
            "Run the MySQL to PostgreSQL migration of billing on a copy before the real cutover. "
            "Compare row counts of every billing table in MySQL and PostgreSQL after the migration.",
        ),
        ("user", "The billing migration from MySQL to PostgreSQL must finish before the audit."),
    ]
    other = [
        ("user", "Unrelated: my laptop battery drains overnight while the lid is closed."),
        ("assistant", "Check whether hibernation is disabled in the power settings."),
        ("user", "Also, which font do you recommend for reading code on a small screen?"),
        ("assistant", "A monospaced font with clear zero and letter o shapes, such as JetBrains Mono, works well."),
    ]
    summary = extractive_summary(_episodes(migration + other), max_tokens=120)
    assert "PostgreSQL" in summary
    assert "battery" in summary.lower(), summary
    assert "font" in summary.lower(), summary


GERMAN = [
    ("user", "Ich richte gerade einen neuen Server für unsere Arztpraxis ein und brauche Hilfe beim Backup."),
    (
        "assistant",
        "Für die Sicherung der Datenbank empfehle ich ein tägliches Backup mit pg_dump.\n"
        "```bash\npg_dump -U praxis -F c praxisdb > /backup/praxis_$(date +%F).dump\n```\n"
        "Bewahren Sie mindestens eine Kopie außerhalb der Praxis auf.",
    ),
    (
        "user",
        "Die Sicherung bricht jede Nacht mit einem Fehler ab:\n"
        + "\n".join(["pg_dump: error: connection refused"] * 8),
    ),
    (
        "assistant",
        "Der Datenbankdienst startet nach dem nächtlichen Neustart zu spät. "
        "Verschieben Sie den Cronjob um eine halbe Stunde nach hinten.",
    ),
    ("user", "Danke, das hat funktioniert. Die Sicherung läuft jetzt durch."),
    ("user", "Danke, das hat funktioniert. Die Sicherung läuft jetzt durch."),
]

JAPANESE = [
    ("user", "新しいサーバーにデータベースを移行しています。移行の手順を教えてください。"),
    (
        "assistant",
        "まず古いサーバーでバックアップを取得してください。次に新しいサーバーで復元します。"
        "\n```\npg_restore -d app /tmp/app.dump\n```\n復元後に行数を比較して確認してください。",
    ),
    ("user", "ありがとうございます。ありがとうございます。ありがとうございます。復元の途中でエラーが出ました。"),
    ("user", 'ERROR:  relation "users" already exists\nERROR:  relation "users" already exists'),
    ("assistant", "既存のテーブルがあるため、空のデータベースに復元するか、クリーンオプションを使ってください。"),
]

MIXED = [
    ("user", "Our team in Osaka uses the staging server for QA. 大阪のチームはステージング環境でテストしています。"),
    ("assistant", "Then the staging deploy should wait until the Osaka team has finished their tests."),
    ("user", "大阪のチームはステージング環境でテストしています。Please remind me to check the deploy window."),
    (
        "assistant",
        '```yaml\ndeploy:\n  window: "02:00-04:00 JST"\n```\nThe deploy window is from two to four in the morning, Japan time.',
    ),
]


@pytest.mark.parametrize(
    ("turns", "must_have", "code"),
    [
        (GERMAN, ["Sicherung", "Cronjob"], ["pg_dump -U", "connection refused", "```"]),
        (JAPANESE, ["バックアップ", "既存のテーブル"], ["pg_restore", "already exists", "```"]),
        (MIXED, ["大阪", "deploy window"], ["window:", "```", "deploy:"]),
    ],
    ids=["german", "japanese", "mixed"],
)
def test_non_english_sessions_are_summarised_without_repeats_or_code(
    turns: list[tuple[str, str]], must_have: list[str], code: list[str]
) -> None:
    summary = extractive_summary(_episodes(turns))
    for text in must_have:
        assert text in summary, (text, summary)
    for text in code:
        assert text not in summary, (text, summary)
    _assert_no_repeats(summary)
    assert summary.count("ありがとうございます") <= 1
    assert count_tokens(summary) <= SUMMARY_MAX_TOKENS


@pytest.mark.parametrize(
    "turns",
    [
        [],
        [("user", "hi"), ("assistant", "Hello! How can I help?")],
        [("user", "Hallo!"), ("assistant", "Guten Tag! Wie kann ich helfen?"), ("user", "Danke, tschüss.")],
        [("user", "こんにちは"), ("assistant", "こんにちは！")],
        [("user", "```\nls -la\n```"), ("assistant", "```\ntotal 0\n```")],
    ],
    ids=["empty", "greeting", "german-greeting", "japanese-greeting", "code-only"],
)
def test_a_session_with_nothing_to_summarise_has_an_empty_summary(turns: list[tuple[str, str]]) -> None:
    assert extractive_summary(_episodes(turns)) == ""
