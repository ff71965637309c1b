"""The attributes the offline extractor writes (docs/consolidation.md, "Vocabulary"). A fact's
attribute is one of these, or `favorite_<thing>` / `<event>_date` / `prefers_for_<purpose>` built from
the words said."""

from __future__ import annotations

ATTRIBUTES: dict[str, str] = {
    # identity and contact
    "name": "the subject's name",
    "preferred_name": "what the subject asks to be called",
    "email": "an e-mail address",
    "phone": "a phone number",
    "location": "where the subject lives or is based",
    "timezone": "the subject's time zone",
    "diet": "a diet (vegetarian, vegan, ...)",
    # work
    "employer": "the organisation the subject works at",
    "job_title": "the subject's role",
    "status": "the state of a named project or product (semantic.validation.STATE_PHRASES)",
    # the people a subject has one of at a time (rules.ROLE_ATTRIBUTES): a new one replaces the old
    "manager": "whom the subject reports to (manager, boss, supervisor, team lead)",
    "mentor": "the subject's mentor",
    "reviewer": "who reviews the subject's code",
    "partner": "the subject's partner (wife, husband, spouse, ...)",
    "landlord": "the subject's landlord",
    "doctor": "the subject's doctor",
    "therapist": "the subject's therapist",
    # preferences
    "prefers": "a preferred option",
    "likes": "something the subject likes",
    "dislikes": "something the subject dislikes",
    "preferred_language": "the language answers should be in",
    "answer_style": "how answers should be written (a phrase headed by a kind of answer), single-valued",
    "instructions": "a standing instruction (always / never ...)",
    "contact_preference": "how the subject wants to be contacted",
    "preferences": "a preference told as a clause",
    # the subject's world
    "relations": "family, partners, friends, pets, team",
    "possessions": "something the subject has or bought",
    "experiences": "something the subject did (dated when said with a date)",
    "plans": "an intention, dated when said with a date",
    "constraints": "what the subject must or cannot do, and why",
    "about": "a lasting state of the subject that passes the same tests and fits no other attribute",
    # technical environment (a known tool fills its own slot, single-valued)
    "database": "the database in use",
    "cloud_provider": "the cloud in use",
    "operating_system": "the operating system in use",
    "orchestration": "the orchestrator in use",
    "ci": "the CI system in use",
    "editor": "the editor in use",
    "web_framework": "the framework the subject's web backend is built on",
    "uses": "a named tool, library, service or version in use",
    "runs_on": "where the subject's systems run",
    "known_issues": "a problem the subject reports",
    # dates
    "birthday": "the subject's birthday",
}
