"""Learning entity aliases from conversations, as part of consolidation.

Each message of a batch is read for the second names it states (episodic.extraction.coreferences:
"Melanie (Mel)", "Mel, short for Melanie", "Thanks, Mel!" said to a speaker named Melanie); each pair
becomes a learned alias of the subject (semantic.aliases.entity_alias_learned, which also files the
subject's facts under the canonical name). It runs before extraction, so that the batch's own facts
about "Mel" are merged with Melanie's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from consolidation.extractors.rules import SPEAKER_ROLES, speaker_of
from episodic.extraction import coreferences
from episodic.models import Episode, EpisodeKind
from semantic.aliases import entity_alias_learned
from semantic.types import Actor
from tenants.models import Tenant


def aliases_learn(*, tenant: Tenant, subject: str, episodes: Sequence[Episode], actor: Actor) -> int:
    """Learn the aliases the subject's messages state; returns how many were new."""
    messages = [e for e in episodes if e.kind == EpisodeKind.MESSAGE and e.content.strip()]
    # The people of each conversation: the roles that name a speaker ("Caroline"), not "user".
    speakers: dict[int, set[str]] = defaultdict(set)
    for episode in messages:
        name = speaker_of(episode.role, subject)
        if name and episode.role.strip().lower() not in SPEAKER_ROLES:
            speakers[episode.session_id].add(name)
    learned = 0
    for episode in messages:
        speaker = speaker_of(episode.role, subject)
        if speaker is None:
            continue
        for alias, entity in coreferences(episode.content, speaker=speaker, speakers=speakers[episode.session_id]):
            row = entity_alias_learned(
                tenant=tenant, alias=alias, entity=entity, subject=subject, episode_id=episode.id, actor=actor
            )
            learned += row is not None
    return learned
