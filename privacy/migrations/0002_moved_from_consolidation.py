"""What names erasure requests and the privacy tasks by their old app, moved with them (issue 40, item
11): the content type (so every operator's permission on erasure requests, and the admin's log of them,
stays theirs) and the periodic tasks stored under the task paths of consolidation.tasks. No table of
Engram's changes."""

from typing import Any

from django.db import migrations
from django.utils import timezone

TASKS = ("process_erasure_requests", "execute_erasure", "export_tenant_file")


def _content_type_move(apps: Any, source: str, target: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    LogEntry = apps.get_model("admin", "LogEntry")
    old = ContentType.objects.filter(app_label=source, model="erasurerequest").first()
    if old is None:
        return
    new = ContentType.objects.filter(app_label=target, model="erasurerequest").first()
    if new is None:
        old.app_label = target
        old.save(update_fields=["app_label"])
        return
    # Both exist (post_migrate of a run that loaded the new app created the new one): the grants of the
    # old permissions go to the new ones of the same codename before the old type goes.
    for permission in Permission.objects.filter(content_type=old):
        twin = Permission.objects.filter(content_type=new, codename=permission.codename).first()
        if twin is None:
            permission.content_type = new
            permission.save(update_fields=["content_type"])
            continue
        twin.user_set.add(*permission.user_set.all())
        twin.group_set.add(*permission.group_set.all())
    LogEntry.objects.filter(content_type=old).update(content_type=new)
    old.delete()


def _tasks_rename(apps: Any, source: str, target: str) -> None:
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTasks = apps.get_model("django_celery_beat", "PeriodicTasks")
    renamed = sum(
        PeriodicTask.objects.filter(task=f"{source}.tasks.{name}").update(task=f"{target}.tasks.{name}") for name in TASKS
    )
    if renamed:
        # What a save's signal does: a running beat reloads its schedule.
        PeriodicTasks.objects.update_or_create(ident=1, defaults={"last_update": timezone.now()})


def forwards(apps: Any, schema_editor: Any) -> None:
    _content_type_move(apps, "consolidation", "privacy")
    _tasks_rename(apps, "consolidation", "privacy")


def backwards(apps: Any, schema_editor: Any) -> None:
    _content_type_move(apps, "privacy", "consolidation")
    _tasks_rename(apps, "privacy", "consolidation")


class Migration(migrations.Migration):
    dependencies = [
        ("privacy", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("admin", "0003_logentry_add_action_flag_choices"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
