"""`migrate` as the schema owner: the application role may not create tables or policies."""

from typing import Any

from django.core.management.commands.migrate import Command as DjangoMigrate

from tenants.dbroles import owner_credentials, switch_connection_user


class Command(DjangoMigrate):
    def handle(self, *args: Any, **options: Any) -> None:
        creds = owner_credentials()
        if creds:
            switch_connection_user(options["database"], creds["USER"], creds["PASSWORD"])
        super().handle(*args, **options)
