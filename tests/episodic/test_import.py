"""manage.py import_conversations: LoCoMo and JSONL, through the service, idempotent."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from episodic.management.commands.import_conversations import parse_locomo_datetime
from episodic.models import Episode, Session
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db

LOCOMO_FILE = Path(settings.BASE_DIR).parent / "shared" / "datasets" / "locomo" / "locomo10.json"

SAMPLE = [
    {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! I went to a support group."},
                {
                    "speaker": "Melanie",
                    "dia_id": "D1:2",
                    "text": "Look at this!",
                    "img_url": ["http://x/y.jpg"],
                    "blip_caption": "a photo of a dog on a beach",
                },
            ],
            "session_2_date_time": "8:10 am on 20 June, 2023",
            "session_2": [{"speaker": "Melanie", "dia_id": "D2:1", "text": "I painted a sunrise."}],
            # More date keys than sessions, as in the real file.
            "session_3_date_time": "9:00 am on 1 July, 2023",
        },
        "qa": [],
    },
    {
        "sample_id": "conv-2",
        "conversation": {
            "speaker_a": "Jon",
            "speaker_b": "Gina",
            "session_1_date_time": "4:04 pm on 20 January, 2023",
            "session_1": [{"speaker": "Jon", "dia_id": "D1:1", "text": "I lost my job as a banker."}],
        },
        "qa": [],
    },
]


def _import(tenant, fmt: str, path: Path) -> str:
    out = StringIO()
    call_command("import_conversations", "--tenant", tenant.slug, "--format", fmt, str(path), "--quiet", stdout=out)
    return out.getvalue()


def test_locomo_datetime() -> None:
    assert parse_locomo_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_datetime("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)


def test_locomo_import_maps_conversations_sessions_and_turns(tenant_a, tmp_path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE))
    report = _import(tenant_a, "locomo", path)
    assert "conversations=2 sessions=3 episodes_read=4 created=4 skipped_existing=0" in report
    with tenant_scope(tenant_a):
        sessions = {s.external_id: s for s in Session.objects.for_tenant(tenant_a)}
        assert set(sessions) == {"conv-1:session_1", "conv-1:session_2", "conv-2:session_1"}
        assert sessions["conv-1:session_2"].started_at == datetime(2023, 6, 20, 8, 10, tzinfo=UTC)
        assert sessions["conv-1:session_1"].subject == "conv-1"
        assert sessions["conv-1:session_1"].episode_count == 2
        photo = Episode.objects.for_tenant(tenant_a).get(external_id="D1:2", session__external_id="conv-1:session_1")
        assert photo.content == "Look at this! [shares a photo: a photo of a dog on a beach]"
        assert photo.role == "Melanie"
        assert photo.payload["blip_caption"] == "a photo of a dog on a beach"
        assert photo.occurred_at == datetime(2023, 5, 8, 13, 56, 1, tzinfo=UTC)
        assert "mel" in Episode.objects.for_tenant(tenant_a).get(external_id="D1:1", subject="conv-1").entities


def test_second_run_adds_nothing(tenant_a, tmp_path) -> None:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(SAMPLE))
    _import(tenant_a, "locomo", path)
    report = _import(tenant_a, "locomo", path)
    assert "created=0 skipped_existing=4" in report
    with tenant_scope(tenant_a):
        assert Episode.objects.for_tenant(tenant_a).count() == 4
        assert Session.objects.for_tenant(tenant_a).get(external_id="conv-1:session_1").episode_count == 2


def test_jsonl_import_streams_validates_and_is_idempotent(tenant_a, tmp_path) -> None:
    lines = [
        {
            "subject": "u1",
            "session": "chat-1",
            "content": "hello",
            "occurred_at": "2024-01-01T10:00:00Z",
            "external_id": "m1",
        },
        {"subject": "u1", "session": "chat-1", "content": "no id here", "occurred_at": "2024-01-01T10:01:00Z"},
        {"subject": "u1", "session": "chat-1", "content": "no id here", "occurred_at": "2024-01-01T10:01:00Z"},
        {"subject": "u2", "session": "chat-2", "kind": "tool_call", "payload": {"tool": "search"}},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    assert "created=3 skipped_existing=0" in _import(tenant_a, "jsonl", path)
    assert "created=0 skipped_existing=3" in _import(tenant_a, "jsonl", path)
    with tenant_scope(tenant_a):
        assert Episode.objects.for_tenant(tenant_a).count() == 3


def test_jsonl_bad_line_names_it_and_writes_nothing_of_its_batch(tenant_a, tmp_path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"subject": "u1", "session": "c", "content": "x", "kind": "gossip"}) + "\n")
    with pytest.raises(CommandError, match="/episodes/0/kind"):
        _import(tenant_a, "jsonl", path)
    path.write_text("{not json\n")
    with pytest.raises(CommandError, match="line 1"):
        _import(tenant_a, "jsonl", path)
    with tenant_scope(tenant_a):
        assert not Episode.objects.for_tenant(tenant_a).exists()


@pytest.mark.skipif(not LOCOMO_FILE.exists(), reason="the shared LoCoMo file is not beside the repository")
def test_real_locomo_conversation_imports_whole(tenant_a, tmp_path) -> None:
    first = json.loads(LOCOMO_FILE.read_text())[:1]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(first))
    turns = sum(len(v) for k, v in first[0]["conversation"].items() if k.startswith("session_") and isinstance(v, list))
    report = _import(tenant_a, "locomo", path)
    assert f"created={turns} skipped_existing=0" in report
    with tenant_scope(tenant_a):
        assert Episode.objects.for_tenant(tenant_a).filter(subject=first[0]["sample_id"]).count() == turns
