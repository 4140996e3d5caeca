"""The Celery entry point of the chat bots: it runs the function its job runs in-process (``core.jobs`` sends it by name)."""
from __future__ import annotations

from celery import shared_task

from bots.answering import ANSWER_TASK, answer_event


@shared_task(name=ANSWER_TASK, acks_late=True, ignore_result=True)
def answer_event_task(event_id: int) -> None:
    answer_event(event_id)
