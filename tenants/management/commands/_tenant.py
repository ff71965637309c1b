"""Shared argument handling for commands that act on one tenant (`--tenant <slug or id>`) or on one
or all (`--tenant` or `--all`), and their progress bars (`--no-progress`)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db.models import QuerySet
from tqdm import tqdm

from tenants.models import Tenant
from tenants.scope import tenant_scope


def add_tenant_argument(parser: CommandParser) -> None:
    parser.add_argument("--tenant", required=True, help="Tenant slug or id")


def resolve_tenant(value: str) -> Tenant:
    try:
        return Tenant.objects.get(id=uuid.UUID(value))
    except ValueError:
        is_id = False
    except Tenant.DoesNotExist:
        is_id = True
    try:
        return Tenant.objects.get(slug=value)
    except Tenant.DoesNotExist as exc:
        # A tenant's id is chosen when it is created, so only a slug can be named in advance.
        slug = "<slug>" if is_id else value
        raise CommandError(
            f'No tenant {value!r} (by slug or id). Create it with: manage.py create_tenant "<name>" --slug {slug}'
        ) from exc


def add_tenants_arguments(parser: CommandParser, *, every: str = "Every tenant") -> None:
    """`--tenant <slug or id>` or `--all` (described by `every`), one of them required."""
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--tenant", help="Tenant slug or id")
    target.add_argument("--all", action="store_true", help=every)


def resolve_tenants(options: dict[str, Any], every: QuerySet[Tenant]) -> list[Tenant]:
    """The tenant named by `--tenant`, or with `--all` each tenant of `every`, by slug."""
    return list(every.order_by("slug")) if options["all"] else [resolve_tenant(options["tenant"])]


def progress_bar(options: dict[str, Any], **kwargs: Any) -> tqdm[Any]:
    """A progress bar on stderr, silent with `--no-progress`."""
    return tqdm(file=sys.stderr, disable=options["no_progress"], **kwargs)


def backfill_tenants(
    command: BaseCommand,
    options: dict[str, Any],
    tenants: Sequence[Tenant],
    *,
    missing: Callable[[Tenant], int],
    backfill: Callable[[Tenant, Callable[[int], None]], int],
    unit: str,
    complete: str,
    done: str,
) -> int:
    """Each tenant's backfill: how much it misses (counted in its scope), then `backfill` with a progress
    bar over that total, and one line per tenant: `complete` when nothing was missing, else `done`
    formatted with `done` and `missing`. Returns the total done."""
    total = 0
    for tenant in tenants:
        with tenant_scope(tenant):
            left = missing(tenant)
        if not left:
            command.stdout.write(f"{tenant.slug}: {complete}")
            continue
        with progress_bar(options, total=left, unit=unit, desc=tenant.slug) as bar:
            count = backfill(tenant, bar.update)
        total += count
        command.stdout.write(f"{tenant.slug}: {done.format(done=count, missing=left)}")
    return total
