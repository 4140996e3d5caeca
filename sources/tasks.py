"""The Celery entry points of sources: each runs the function its job runs in-process (``core.jobs`` sends them by name)."""
from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from sources.run import RUN_TASK, execute_run
from sources.schedule import start_scheduler


@shared_task(name=RUN_TASK, acks_late=True, ignore_result=True)
def run_source_task(run_id: int) -> None:
    execute_run(run_id)


@worker_ready.connect
def _start_scheduler_in_worker(**_kwargs) -> None:
    """Each Celery worker starts due scheduled runs and fails dead ones (sources.schedule), once across all workers."""
    start_scheduler()
