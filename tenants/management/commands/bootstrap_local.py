"""First-start set-up for the run command: an admin user and a demo tenant with a key, each created
once. Their credentials are printed when created and kept in .data/credentials.txt for this machine."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from tenants.models import Tenant
from tenants.services import api_key_create, tenant_create

DEMO_SLUG = "demo"


class Command(BaseCommand):
    help = "Create the local admin user and the demo tenant once; print where to look."

    def handle(self, *args: Any, **options: Any) -> None:
        creds_file = Path(settings.BASE_DIR) / ".data" / "credentials.txt"
        creds_file.parent.mkdir(exist_ok=True)
        lines: list[str] = []
        user_model = get_user_model()
        if not user_model.objects.filter(username="admin").exists():
            password = secrets.token_urlsafe(12)
            user_model.objects.create_superuser("admin", "admin@localhost", password)
            lines.append(f"ADMIN_USER=admin\nADMIN_PASSWORD={password}\n")
        if not Tenant.objects.filter(slug=DEMO_SLUG).exists():
            tenant = tenant_create(name="Demo", slug=DEMO_SLUG)
            issued = api_key_create(
                tenant=tenant, name="demo", scopes=["read", "write", "admin"], created_by="bootstrap"
            )
            lines.append(f"DEMO_TENANT={tenant.slug}\nDEMO_API_KEY={issued.raw}\n")
            self._seed(tenant, issued.raw)
        # Periodic schedules (consolidation, decay, archiving, erasure, ...) live in the database.
        call_command("setup_schedules", stdout=self.stdout)
        if lines:
            with creds_file.open("a") as fh:
                fh.writelines(lines)
            creds_file.chmod(0o600)
            self.stdout.write("".join(lines))
        else:
            self.stdout.write(f"Admin user and demo tenant exist; their credentials are in {creds_file}.")

    def _seed(self, tenant: Tenant, raw_key: str) -> None:
        from django.core.management import get_commands

        # The demo conversations arrive with the memory apps; seed them where the command exists.
        if "seed_demo" in get_commands():
            call_command("seed_demo", "--tenant", tenant.slug, stdout=self.stdout)
