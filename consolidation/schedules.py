"""The periodic schedules of Engram, stored in django-celery-beat so operators can edit them.

`schedules_setup()` creates each one that is missing and leaves existing ones as operators left them
(interval, enabled flag); `--reset` puts the defaults back.

Each tick expires (`expire_seconds`): a tick a busy worker has not started by then is dropped rather
than run late beside the next one, so ticks never pile up in the queues."""

from __future__ import annotations

import dataclasses
import json

from django.db import transaction
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask


@dataclasses.dataclass(frozen=True)
class Schedule:
    name: str
    task: str
    every_seconds: int | None = None
    crontab: tuple[str, str] | None = None  # (minute, hour) UTC
    description: str = ""
    # Daily ticks (crontab) may wait this long for a worker; interval ticks until their next one.
    expire_after: int = 6 * 3600

    @property
    def expire_seconds(self) -> int:
        return self.every_seconds if self.every_seconds is not None else self.expire_after


SCHEDULES: list[Schedule] = [
    Schedule(
        "engram: consolidation sweep",
        "consolidation.tasks.consolidation_sweep",
        every_seconds=180,
        description="Consolidate tenants whose backlog hit the entity threshold or waited too long.",
    ),
    Schedule(
        "engram: embedding backlog",
        "episodic.tasks.embed_backlog",
        every_seconds=30,
        description="Embed new episodes in batches, off the request path.",
    ),
    Schedule(
        "engram: scratchpad expiry",
        "episodic.tasks.sweep_expired_scratchpads",
        every_seconds=300,
        description="Summarise and drop expired scratchpads.",
    ),
    Schedule(
        "engram: erasure requests",
        "privacy.tasks.process_erasure_requests",
        every_seconds=60,
        description="Start waiting erasure requests, retry failed or abandoned ones.",
    ),
    Schedule(
        "engram: idempotency records",
        "tenants.tasks.purge_idempotency_records",
        every_seconds=3600,
        description="Delete stored idempotent answers older than ENGRAM_IDEMPOTENCY_TTL_HOURS.",
    ),
    Schedule(
        "engram: value models",
        "router.tasks.value_models",
        every_seconds=3600,
        description="Roll back a learned value that fell below the formula; train the next from feedback.",
    ),
    Schedule(
        "engram: decay and forgetting",
        "consolidation.tasks.decay_and_forget",
        crontab=("15", "2"),
        description="Decay fact confidence by category half-life; expire unconfirmed or faded facts.",
    ),
    Schedule(
        "engram: archiving",
        "consolidation.tasks.archive_episodes",
        crontab=("45", "2"),
        description="Move episodes past retention to cold storage.",
    ),
    Schedule(
        "engram: procedure discovery",
        "procedural.tasks.discover_procedures",
        crontab=("30", "3"),
        description="Mine candidate procedures from outcomes.",
    ),
]


@transaction.atomic
def schedules_setup(*, reset: bool = False) -> dict[str, str]:
    """Create the missing schedules (or, with reset, restore every default). Returns name -> action."""
    actions: dict[str, str] = {}
    for item in SCHEDULES:
        defaults: dict[str, object] = {
            "task": item.task,
            "description": item.description,
            "kwargs": json.dumps({}),
            "interval": None,
            "crontab": None,
            "expire_seconds": item.expire_seconds,
        }
        if item.every_seconds is not None:
            defaults["interval"], _ = IntervalSchedule.objects.get_or_create(
                every=item.every_seconds, period=IntervalSchedule.SECONDS
            )
        else:
            assert item.crontab is not None
            minute, hour = item.crontab
            defaults["crontab"], _ = CrontabSchedule.objects.get_or_create(
                minute=minute, hour=hour, day_of_week="*", day_of_month="*", month_of_year="*", timezone="UTC"
            )
        existing = PeriodicTask.objects.filter(name=item.name).first()
        if existing is None:
            PeriodicTask.objects.create(name=item.name, enabled=True, **defaults)
            actions[item.name] = "created"
        elif reset:
            for key, value in defaults.items():
                setattr(existing, key, value)
            existing.enabled = True
            existing.save()
            actions[item.name] = "reset"
        else:
            actions[item.name] = "kept"
    return actions
