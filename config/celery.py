"""The Celery application shared by the worker, beat and the web process (which only enqueues)."""

import os
from typing import Any

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("engram")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def _logging_from_settings(**kwargs: Any) -> None:
    # A receiver here keeps Celery from replacing the handlers: worker and beat log like the web
    # process, one JSON line per record with the request, tenant and task ids.
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)


# Beat alone waits out a broker restart: a tick it gave up would skip a daily run (decay, archiving)
# until the next day. About a minute of retries per send; the web process keeps the short default, so a
# request never hangs on a missing broker (tests/production/test_beat_redis_restart.py).
BEAT_PUBLISH_RETRY_POLICY = {"max_retries": 15, "interval_start": 0, "interval_step": 1, "interval_max": 5}


@signals.beat_init.connect
def _beat_waits_for_the_broker(sender: Any = None, **kwargs: Any) -> None:
    app.conf.task_publish_retry_policy = BEAT_PUBLISH_RETRY_POLICY


@signals.celeryd_init.connect
def _metrics_dir_clean(**kwargs: Any) -> None:
    # Django (and so every metric) is loaded by now, in this process only: the pool is not forked yet.
    from config.metrics import multiprocess_dir_clean

    multiprocess_dir_clean(keep_pid=os.getpid())


@signals.worker_ready.connect
def _metrics_serve(**kwargs: Any) -> None:
    from config.metrics import worker_metrics_serve

    worker_metrics_serve()


@signals.worker_process_shutdown.connect
def _metrics_process_dead(**kwargs: Any) -> None:
    from config.metrics import process_mark_dead

    process_mark_dead(os.getpid())


@signals.task_prerun.connect
def _task_started(task_id: str, task: Any, args: Any = (), **kwargs: Any) -> None:
    from config.logs import task_started

    task_started(task_id=task_id, task=task, args=args)


@signals.task_postrun.connect
def _task_finished(task_id: str, task: Any, state: str | None = None, **kwargs: Any) -> None:
    from config.logs import task_finished

    task_finished(task_id=task_id, task=task, state=state)
