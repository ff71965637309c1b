"""The blind update set: its digest, the matching of values and the scoring of a pair, on items made up
here (never the set's), and the command refusing a changed set and printing aggregates only."""

from __future__ import annotations

import io
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.blind_updates import (
    BLIND_DIR,
    SETS,
    SUMS_PATH,
    ContextItem,
    FactSeen,
    SetDigestMismatch,
    aggregate,
    file_digest,
    holds,
    is_clause,
    recorded_digest,
    score_pair,
    set_path,
    verified_items,
)

FIRST = "subj:s1:statement"


def _item(**fields: Any) -> dict[str, Any]:
    base = {
        "id": "t-1",
        "kind": "made_up",
        "supersedes": True,
        "first": "The kiln in my studio is a Skutt KM-818.",
        "second": "I replaced the kiln with a Paragon TnF-27.",
        "old_value": "Skutt KM-818",
        "new_value": "Paragon TnF-27",
        "query": "Which kiln does the user have?",
    }
    return base | fields


def _fact(value: str, status: str = "active", *sources: str) -> FactSeen:
    return FactSeen(value=value, status=status, source_external_ids=sources)


# --- the set -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_set_has_the_digest_recorded_in_sha256sums(name: str) -> None:
    path = set_path(name)
    assert file_digest(path) == recorded_digest(path, SUMS_PATH)
    items = verified_items(path, SUMS_PATH)
    kinds = {s: Counter(i["kind"] for i in items if i["supersedes"] is s) for s in (True, False)}
    assert sum(kinds[True].values()) >= 100 and len(kinds[True]) >= 20
    assert sum(kinds[False].values()) >= 100
    assert len({i["id"] for i in items}) == len(items)
    fields = {"id", "kind", "supersedes", "first", "second", "old_value", "new_value", "query"}
    assert all(fields <= set(i) for i in items)
    # Each statement names its typed value, as the matcher reads it. Only ids are shown on failure:
    # nobody working on extraction is to read an item.
    unmatched = [
        i["id"]
        for i in items
        if not holds(i["first"], i["old_value"])
        or (i["new_value"] is not None and not holds(i["second"], i["new_value"]))
    ]
    assert not unmatched


def test_every_set_has_its_digest_recorded_and_every_digest_names_a_set() -> None:
    recorded = {line.split()[1].lstrip("*") for line in SUMS_PATH.read_text().splitlines() if line.strip()}
    assert recorded == {path.name for path in SETS.values()}
    assert {"v1", "v2", "v3"} <= set(SETS)


def test_a_set_is_named_by_its_version_or_given_by_its_path(tmp_path: Path) -> None:
    assert set_path("v1") == BLIND_DIR / "updates_v1.jsonl"
    assert set_path("v2") == BLIND_DIR / "updates_v2.jsonl"
    assert set_path("v3") == BLIND_DIR / "updates_v3.jsonl"
    assert set_path(str(tmp_path / "mine.jsonl")) == tmp_path / "mine.jsonl"


@pytest.mark.parametrize("name", sorted(SETS))
def test_a_changed_set_is_refused(tmp_path: Path, name: str) -> None:
    copy = tmp_path / set_path(name).name
    shutil.copy(set_path(name), copy)
    shutil.copy(SUMS_PATH, tmp_path / SUMS_PATH.name)
    assert verified_items(copy, tmp_path / SUMS_PATH.name)
    copy.write_bytes(copy.read_bytes().replace(b'"supersedes": true', b'"supersedes": false', 1))
    with pytest.raises(SetDigestMismatch):
        verified_items(copy, tmp_path / SUMS_PATH.name)


# --- matching values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("paragon tnf-27", "Paragon TnF-27"),
        ("The studio moved to Zürich", "Zurich"),
        ("due 2031-10-14", "October 14"),
        ("14th of October", "Oct 14"),
        ("weekly at 14:00", "2pm"),
        ("USD 12,000 a month", "$12k"),
        ("our cap is 4500", "€4,500"),
        ("call +31 20 555 0101", "+31 (20) 555-0101"),
        ("Ruby 3.30", "Ruby 3.30"),
        ("9 volunteers", "nine volunteers"),
        ("9", "9 volunteers"),
        ("r.vos@kilnworks.example", "R.Vos@kilnworks.example"),
        ("Saturdays", "Saturday"),
    ],
)
def test_a_value_is_held_by_its_content_terms(text: str, value: str) -> None:
    assert holds(text, value)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Ruby 3.3", "Ruby 3.30"),
        ("Ruby 3.30", "Ruby 3.3"),
        ("October 4", "October 14"),
        ("15:00", "2pm"),
        ("$1,200", "$12k"),
        ("eu-south-2", "eu-south-1"),
        ("Paragon", "Paragon TnF-27"),
        ("r.vos@kilnworks.example", "vos@kilnworks.example"),
        ("anything", None),
        ("anything", ""),
    ],
)
def test_a_different_value_is_not_held(text: str, value: str | None) -> None:
    assert not holds(text, value)


def test_a_clause_is_a_value_many_words_longer_than_the_typed_one() -> None:
    assert is_clause("that they replaced the kiln with a Paragon TnF-27", "Paragon TnF-27")
    assert not is_clause("Paragon TnF-27 kiln", "Paragon TnF-27")


# --- scoring a pair ------------------------------------------------------------------------------


def test_an_update_superseded_as_it_should_be() -> None:
    facts = [_fact("Skutt KM-818", "superseded", FIRST), _fact("Paragon TnF-27", "active", "subj:s2:statement")]
    context = [ContextItem("The user has a Paragon TnF-27 kiln.", 3), ContextItem("I have a Skutt KM-818.", 40)]
    score = score_pair(_item(), facts, context, first_external_id=FIRST)
    assert (score.covered, score.new_held, score.old_active, score.superseded) == (True, True, False, True)
    assert score.newer_first and not score.clause


def test_an_update_that_left_the_old_value_active_is_not_superseded() -> None:
    facts = [_fact("Skutt KM-818", "active", FIRST), _fact("Paragon TnF-27", "active")]
    score = score_pair(_item(), facts, [], first_external_id=FIRST)
    assert score.new_held and score.old_active and not score.superseded
    assert not score.newer_first  # nothing served


def test_a_value_holding_both_as_a_clause_is_counted_and_does_not_supersede() -> None:
    facts = [_fact("replaced the Skutt KM-818 with a Paragon TnF-27 last month", "active")]
    score = score_pair(_item(), facts, [], first_external_id=FIRST)
    assert score.clause and score.old_active and not score.superseded


def test_coverage_needs_the_first_statement_as_a_source() -> None:
    facts = [_fact("Skutt KM-818", "superseded", "subj:s2:statement"), _fact("Paragon TnF-27")]
    assert not score_pair(_item(), facts, [], first_external_id=FIRST).covered
    facts = [_fact("a kiln", "active", FIRST)]
    assert not score_pair(_item(), facts, [], first_external_id=FIRST).covered


def test_context_serving_the_older_statement_first_is_not_newer_first() -> None:
    facts = [_fact("Paragon TnF-27", "active")]
    older_first = [ContextItem("I have a Skutt KM-818.", 0), ContextItem("The kiln is a Paragon TnF-27.", 10)]
    assert not score_pair(_item(), facts, older_first, first_external_id=FIRST).newer_first
    # An item that names both (the second statement saying what it replaced) is not the old value alone.
    both_then_old = [
        ContextItem("Replaced the Skutt KM-818 with a Paragon TnF-27.", 0),
        ContextItem("I have a Skutt KM-818.", 10),
    ]
    assert score_pair(_item(), facts, both_then_old, first_external_id=FIRST).newer_first


def test_a_pair_that_must_not_supersede_is_left_alone_only_if_the_first_value_stays_active() -> None:
    keep = _item(supersedes=False, kind="made_up_keep", second="My friend has a Paragon TnF-27.")
    kept = [_fact("Skutt KM-818", "active", FIRST), _fact("Paragon TnF-27", "active")]
    assert score_pair(keep, kept, [], first_external_id=FIRST).left_alone
    replaced = [_fact("Skutt KM-818", "superseded", FIRST), _fact("Paragon TnF-27", "active")]
    score = score_pair(keep, replaced, [], first_external_id=FIRST)
    assert score.covered and not score.left_alone


def test_aggregates_are_shares_per_kind_and_hold_no_text() -> None:
    good = [_fact("Skutt KM-818", "superseded", FIRST), _fact("Paragon TnF-27")]
    bad = [_fact("Skutt KM-818", "active", FIRST)]
    keep = _item(supersedes=False, kind="made_up_keep")
    scores = [
        score_pair(_item(), good, [], first_external_id=FIRST),
        score_pair(_item(), bad, [], first_external_id=FIRST),
        score_pair(_item(kind="other"), [], [], first_external_id=FIRST),
        score_pair(keep, bad, [], first_external_id=FIRST),
    ]
    result = aggregate(scores)
    updates = {r["kind"]: r for r in result["updates"]}
    assert updates["overall"]["pairs"] == 3
    assert updates["overall"]["supersession_recall"] == round(1 / 3, 3)
    assert updates["made_up"]["supersession_recall"] == 0.5
    assert updates["made_up"]["supersession_recall_if_covered"] == 0.5
    assert updates["made_up"]["old_value_still_active"] == 0.5
    assert updates["other"]["extraction_coverage"] == 0.0
    assert updates["other"]["supersession_recall_if_covered"] is None
    assert result["keeps"][0]["left_alone"] == 1.0
    dumped = json.dumps(result)
    assert "Skutt" not in dumped and "Paragon" not in dumped and "kiln" not in dumped


def test_closed_if_both_read_counts_only_pairs_whose_two_values_were_read() -> None:
    closed = [_fact("Skutt KM-818", "superseded", FIRST), _fact("Paragon TnF-27")]
    left_open = [_fact("Skutt KM-818", "active", FIRST), _fact("Paragon TnF-27")]
    new_not_read = [_fact("Skutt KM-818", "active", FIRST)]
    first_not_read = [_fact("Paragon TnF-27")]
    scores = [
        score_pair(_item(), facts, [], first_external_id=FIRST)
        for facts in (closed, left_open, left_open, new_not_read, first_not_read)
    ]
    keep = score_pair(_item(supersedes=False, kind="made_up_keep"), left_open, [], first_external_id=FIRST)
    result = aggregate([*scores, keep])
    made_up = {r["kind"]: r for r in result["updates"]}["made_up"]
    assert made_up["both_read"] == round(3 / 5, 3)
    assert made_up["closed_if_both_read"] == round(1 / 3, 3)
    assert "closed_if_both_read" not in result["keeps"][0]


# --- the command ---------------------------------------------------------------------------------


def _made_up_set(tmp_path: Path) -> tuple[Path, Path]:
    items = [
        _item(id="a-1"),
        _item(
            id="a-2",
            kind="made_up_keep",
            supersedes=False,
            first="I volunteer at the Harbourside Food Bank on weekends.",
            second="My cousin volunteers at the Riverside Shelter.",
            old_value="Harbourside Food Bank",
            new_value="Riverside Shelter",
            query="Where does the user volunteer?",
            first_context=[{"role": "assistant", "position": "after", "content": "That sounds rewarding."}],
        ),
    ]
    path = tmp_path / "made_up.jsonl"
    path.write_text("".join(json.dumps(i) + "\n" for i in items))
    sums = tmp_path / "SHA256SUMS"
    sums.write_text(f"{file_digest(path)}  {path.name}\n")
    return path, sums


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_command_writes_through_the_api_and_reports_aggregates_only(tmp_path: Path) -> None:
    path, sums = _made_up_set(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    call_command(
        "blind_updates_eval", "--set", str(path), "--sums", str(sums), "--tenant", "blind-test",
        "--json", str(out_json), "--report", str(out_md), stdout=out, stderr=err,
    )  # fmt: skip
    result = json.loads(out_json.read_text())
    assert result["set_digest"] == file_digest(path)
    assert [r["pairs"] for r in result["updates"]] == [1, 1]
    assert [r["pairs"] for r in result["keeps"]] == [1, 1]
    written = result["write_path"]
    assert written["sessions_ended"] == 4 and written["open_sessions"] == 0 and written["runs_failed"] == 0
    printed = out.getvalue() + out_json.read_text() + out_md.read_text()
    assert "supersession recall" in out.getvalue() and "left alone" in out.getvalue()
    for text in ("Skutt", "Paragon", "kiln", "Harbourside", "Riverside", "volunteer", "a-1", "a-2"):
        assert text not in printed


@pytest.mark.django_db
def test_the_command_checks_the_digest_of_the_set_it_is_named(tmp_path: Path) -> None:
    sums = tmp_path / "SHA256SUMS"
    sums.write_text(f"{'0' * 64}  updates_v2.jsonl\n")
    with pytest.raises(CommandError, match=r"updates_v2\.jsonl has digest .* refused"):
        call_command("blind_updates_eval", "--set", "v2", "--sums", str(sums), stdout=io.StringIO())


@pytest.mark.django_db
def test_the_command_refuses_a_set_whose_digest_differs(tmp_path: Path) -> None:
    path, sums = _made_up_set(tmp_path)
    path.write_text(path.read_text().replace("Skutt", "Scutt"))
    with pytest.raises(CommandError, match="refused"):
        call_command("blind_updates_eval", "--set", str(path), "--sums", str(sums), stdout=io.StringIO())
