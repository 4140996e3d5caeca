"""The Celery entry points: each runs the function its job runs in-process (``core.jobs`` sends them by name)."""
from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from knowledge.ingestion.recovery import start_sweeper
from knowledge.ingestion.run import INGEST_TASK, document_ingest
from knowledge.services.calibration import RECALIBRATE_TASK, recalibrate_kb


@shared_task(name=INGEST_TASK, acks_late=True, ignore_result=True)
def ingest_document_task(document_id: int) -> None:
    document_ingest(document_id=document_id)


@shared_task(name=RECALIBRATE_TASK, ignore_result=True)
def recalibrate_kb_task(kb_id: int) -> None:
    recalibrate_kb(kb_id, if_changed=True)


@worker_ready.connect
def _start_sweeper_in_worker(**_kwargs) -> None:
    """Each Celery worker re-queues documents whose ingestion died (knowledge.ingestion.recovery)."""
    start_sweeper()
