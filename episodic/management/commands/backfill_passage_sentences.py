"""Store the vectors of the sentences of every embedded passage of 2 or more sentences that has none
(passages embedded before sentence vectors were stored, or before the tenant kept them), and each
passage's sentence count, at once. The embedding drain does the same within its 30 s for a tenant that
keeps them (Tenant.keeps_sentence_vectors); a tenant that does not is left out. With progress and
totals: passages looked at, those of several sentences, sentence vectors, seconds."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from episodic.passages import passage_sentences_backfill, passage_sentences_missing
from tenants.management.commands._tenant import add_tenants_arguments, progress_bar, resolve_tenants
from tenants.models import Tenant
from tenants.scope import tenant_scope


class Command(BaseCommand):
    help = (
        "Give every embedded passage not looked at yet its sentence count and, where it has 2 or more "
        "sentences, each sentence's vector, one batch per transaction (safe to interrupt and run again). "
        "History's pool reads the best sentence's cosine from them for a tenant that learns its value."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenants_arguments(parser)
        parser.add_argument("--batch", type=int, default=256, help="Passages per transaction (default 256)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1.")
        passages = vectors = 0
        for tenant in resolve_tenants(options, Tenant.objects.all()):
            if not tenant.keeps_sentence_vectors:
                self.stdout.write(
                    f"{tenant.slug}: keeps no sentence vectors (it neither explores nor has a value model)"
                )
                continue
            with tenant_scope(tenant):
                left = passage_sentences_missing(tenant=tenant)
            if not left:
                self.stdout.write(f"{tenant.slug}: every passage has its sentence vectors")
                continue
            started = time.perf_counter()
            with progress_bar(options, total=left, unit=" passages", desc=tenant.slug) as bar:
                done = passage_sentences_backfill(tenant=tenant, batch_size=options["batch"], progress=bar.update)
            seconds = time.perf_counter() - started
            self.stdout.write(
                f"{tenant.slug}: {done.passages} of {left} passages looked at: {done.several} of several "
                f"sentences, {done.vectors} sentence vectors ({done.vectors / max(done.passages, 1):.2f} a "
                f"passage) in {seconds:.1f} s"
            )
            passages += done.passages
            vectors += done.vectors
        self.stdout.write(self.style.SUCCESS(f"Backfilled {passages} passages, {vectors} sentence vectors."))
